"""Environment capture for the manifest: Python, torch, pyperf, platform, CPU, device, commit.

The one module of the result-writing side that imports torch (for its version and the device's
name); readers of run folders never import it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import pyperf
import torch

from bench.base.cpucache import llc_bytes, sweep_env_mb
from bench.base.storage import git_commit


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: torch.device) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "torch": torch.__version__,
        "pyperf": pyperf.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "llc_bytes": llc_bytes(),
        "device": str(device),
        "git_commit": git_commit(),
    }
    if env["llc_bytes"] is None:
        del env["llc_bytes"]
    if (machine_mb := sweep_env_mb()) is not None:
        env["cold_sweep_env_mb"] = machine_mb
    if device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
    try:
        env["load_avg_1min"] = round(os.getloadavg()[0], 2)
    except OSError:  # not available on this platform
        pass
    return env
