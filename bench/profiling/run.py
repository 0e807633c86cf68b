"""Profile strategies: one py-spy run per strategy over bench.profiling.workload's scheduler loop.

Per strategy, py-spy records collapsed stacks once (`--format raw`, kept verbatim as
`<strategy>.raw.txt`). The flamegraph SVG and the speedscope file are derived from the samples
under the loop's root function, so both start at `reqstate_profile_root` and leave out imports
and setup; they show one frame per function (line numbers are in the raw stacks only). The
target writes its gc.callbacks numbers to `<strategy>.gc.json`. `shares.json` sums it up for
the report (file names in it are relative to the output folder).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.base.errors import UsageError
from bench.base.storage import ROOT, write_atomic, write_json
from bench.base.timing import resolve_device
from bench.core import scenarios
from bench.core.callsites import PATTERNS
from bench.profiling.render import flamegraph_svg, to_speedscope
from bench.profiling.stacks import (
    ROOT_FUNCTION,
    by_function,
    compute_shares,
    parse_collapsed,
    under_root,
)
from strategies import StrategyError, resolve

if TYPE_CHECKING:
    import torch

# The profiled process's last line when it fails (bench.profiling.workload prints it).
ERROR_PREFIX = "reqstate-profile-target: error:"

SHARES_FILE = "shares.json"
# Time allowed for the target's imports, scheduler build and warm-up, on top of the loop.
SETUP_TIMEOUT_S = 300.0
PY_SPY_HINT = (
    "py-spy must be able to ptrace the profiled process: run as root, or set "
    "/proc/sys/kernel/yama/ptrace_scope to 0 (in a container: --cap-add SYS_PTRACE)"
)
GC_SOURCE_NATIVE = "py-spy-native"
GC_SOURCE_CALLBACKS = "gc.callbacks"


class ProfileError(RuntimeError):
    """A profiled process failed (a strategy or harness fault, not a usage mistake).

    The strategies that did succeed are in `shares` and were written to shares.json."""

    def __init__(self, failures: dict[str, str], shares: dict[str, dict[str, Any]]) -> None:
        self.failures = failures
        self.shares = shares
        super().__init__("; ".join(f"{name}: {text}" for name, text in failures.items()))


def find_py_spy() -> str:
    """The py-spy next to this interpreter (the venv's), else the one on PATH."""
    local = Path(sys.executable).parent / "py-spy"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("py-spy")
    if found is None:
        raise UsageError(
            "py-spy not found next to this Python or on PATH; install it with "
            "`pip install py-spy` (a project dependency: `make setup` installs it)"
        )
    return found


@dataclass(frozen=True, kw_only=True)
class ProfileSettings:
    """How each strategy's loop is profiled (the same for every strategy of a profile run)."""

    duration_s: float = 10.0  # seconds of steady-state loop per strategy
    scenario: str = "prefill-dspark"  # the scheduler scenario whose loop is profiled
    pattern: str = "per_field"
    device: str = "cpu"
    rate_hz: int = 250  # py-spy samples per second
    native: bool = False  # also sample native frames (shows the collector)


def check_request(
    strategies: list[str], settings: ProfileSettings
) -> tuple[list[str], torch.device]:
    """Refuse impossible settings before anything is written: (names, device). Whether py-spy
    is there is find_py_spy's business, asked after every argument has been checked."""
    duration_s = settings.duration_s
    pattern, rate_hz = settings.pattern, settings.rate_hz
    names = list(dict.fromkeys(strategies))
    if not names:
        raise UsageError("no strategy to profile; name one with --strategy or use --all")
    try:
        resolve(names)
    except StrategyError as exc:
        raise UsageError(str(exc)) from None
    if not math.isfinite(duration_s) or duration_s <= 0:
        raise UsageError(f"duration must be a positive number of seconds, got {duration_s}")
    try:
        scenario = scenarios.get(settings.scenario)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if pattern not in PATTERNS:
        raise UsageError(f"unknown access pattern {pattern!r}; choose from {', '.join(PATTERNS)}")
    if rate_hz <= 0:
        raise UsageError(f"sampling rate must be a positive number of Hz, got {rate_hz}")
    try:
        from bench.core.rowpool import check_fits, default_shape  # torch: only when profiling

        dev = resolve_device(settings.device)
        shape = default_shape(
            dev, chunked_prefill_size=scenario.chunk_tokens, pool_rows=scenario.pool_rows
        )
        check_fits(shape, dev)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return names, dev


def _py_spy_error(stderr: str) -> str | None:
    """py-spy's own error line ("Error: ..."), the last one if several."""
    errors = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("Error:")]
    return errors[-1] if errors else None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def _record(
    py_spy: str, name: str, out_dir: Path, settings: ProfileSettings, device: torch.device
) -> tuple[str, dict[str, Any]] | str:
    """Run the target under py-spy: (raw text, gc numbers), or the target's failure text.
    Raises UsageError when py-spy itself fails (missing permissions, cannot attach)."""
    raw_tmp = out_dir / f".{name}.raw.tmp"
    gc_path = out_dir / f"{name}.gc.json"
    gc_path.unlink(missing_ok=True)  # its presence afterwards means the target succeeded
    raw_tmp.unlink(missing_ok=True)
    (out_dir / f"{name}.error.txt").unlink(missing_ok=True)
    cmd = [
        py_spy,
        "record",
        "--format",
        "raw",
        "--rate",
        str(settings.rate_hz),
        "--output",
        str(raw_tmp),
        *(["--native"] if settings.native else []),
        "--",
        sys.executable,
        "-m",
        "bench.profiling.workload",
        "--strategy",
        name,
        "--duration-s",
        repr(settings.duration_s),
        "--scenario",
        settings.scenario,
        "--pattern",
        settings.pattern,
        "--device",
        str(device),
        "--gc-out",
        str(gc_path),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "1", "RUST_BACKTRACE": "0"}
    timeout_s = settings.duration_s + SETUP_TIMEOUT_S
    # Own process group: on a timeout or Ctrl-C, py-spy and the target it started go together.
    with subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except BaseException as exc:
            _kill_group(proc)
            raw_tmp.unlink(missing_ok=True)
            if isinstance(exc, subprocess.TimeoutExpired):
                return f"timed out after {timeout_s:.0f} s"
            raise
    output = stdout + stderr
    target_errors = [ln for ln in output.splitlines() if ln.startswith(ERROR_PREFIX)]
    if target_errors:
        raw_tmp.unlink(missing_ok=True)
        write_atomic(out_dir / f"{name}.error.txt", output)
        return target_errors[-1][len(ERROR_PREFIX) :].strip() + f" (see {name}.error.txt)"
    spy_error = _py_spy_error(output)
    if proc.returncode != 0 or not raw_tmp.is_file() or not gc_path.is_file():
        raw_tmp.unlink(missing_ok=True)
        if spy_error is not None or proc.returncode != 0:
            hint = PY_SPY_HINT + ("; or retry without --native" if settings.native else "")
            raise UsageError(
                f"py-spy could not profile {name}: {spy_error or _last_line(output)} (hint: {hint})"
            )
        write_atomic(out_dir / f"{name}.error.txt", output)
        return f"profiled process ended without results: {_last_line(output)}"
    raw_path = out_dir / f"{name}.raw.txt"
    os.replace(raw_tmp, raw_path)
    return raw_path.read_text(encoding="utf-8"), json.loads(gc_path.read_text(encoding="utf-8"))


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def profile_strategies(
    strategies: list[str],
    *,
    out_dir: Path,
    progress: Callable[[str], None] = _stderr_progress,
    **settings: Any,
) -> dict[str, dict[str, Any]]:
    """Profile each strategy's steady-state scheduler loop under py-spy (`settings`: the fields
    of ProfileSettings); write per strategy `<name>.svg`, `<name>.speedscope.json`,
    `<name>.raw.txt`, `<name>.gc.json`, and `shares.json` (after every strategy, so an
    interruption keeps those done). Returns the shares.json content. Raises UsageError for bad
    input or an unusable py-spy, and ProfileError, after the others ran, when some strategy's
    process failed."""
    chosen = ProfileSettings(**settings)
    names, dev = check_request(strategies, chosen)
    py_spy = find_py_spy()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out_dir}: cannot create output folder ({exc.strerror})") from None
    shares: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    for i, name in enumerate(names, 1):
        progress(
            f"[{i}/{len(names)}] {name}: profiling {chosen.duration_s:g} s ({chosen.pattern}, "
            f"{chosen.scenario}, {dev}{', native' if chosen.native else ''})"
        )
        got = _record(py_spy, name, out_dir, chosen, dev)
        if isinstance(got, str):
            failures[name] = got
            progress(f"[{i}/{len(names)}] {name}: FAILED: {got}")
            continue
        raw_text, loop = got
        entry = _summarise(name, raw_text, loop, out_dir, native=chosen.native, progress=progress)
        shares[name] = entry
        write_json(out_dir / SHARES_FILE, shares)
        progress(
            f"[{i}/{len(names)}] {name}: {entry['samples']} samples, strategy code "
            f"{entry['strategy_share']:.1%}, call sites {entry['callsite_share']:.1%}, "
            f"GC {entry['gc_share']:.1%} ({entry['gc_share_source']})"
        )
    write_json(out_dir / SHARES_FILE, shares)
    if failures:
        raise ProfileError(failures, shares)
    return shares


def _summarise(
    name: str,
    raw_text: str,
    loop: dict[str, Any],
    out_dir: Path,
    *,
    native: bool,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Shares from the stacks, the two derived views, and the shares.json entry."""
    steady = under_root(parse_collapsed(raw_text))
    shares = compute_shares(steady, ROOT_FUNCTION)
    if native and shares.native_frames:
        gc_share, gc_source = shares.gc_share, GC_SOURCE_NATIVE
    else:
        if native:
            progress(f"{name}: --native gave no native frames; GC share from gc.callbacks")
        loop_ns = int(loop["loop_ns"])
        gc_share = min(1.0, int(loop["gc_pause_ns"]) / loop_ns) if loop_ns > 0 else 0.0
        gc_source = GC_SOURCE_CALLBACKS
    subtitle = (
        f"{shares.samples} samples over {loop['steps']} iterations of {loop['scenario']} "
        f"({loop['pattern']}, {loop['device']}): strategy code "
        f"{shares.strategy_share:.1%}, call sites {shares.callsite_share:.1%}, "
        f"GC {gc_share:.1%} ({gc_source})"
    )
    per_function = by_function(steady)
    svg = flamegraph_svg(
        per_function, title=f"{name}: steady-state scheduler loop", subtitle=subtitle
    )
    write_atomic(out_dir / f"{name}.svg", svg)
    speedscope = to_speedscope(per_function, name=f"{name} ({loop['pattern']})")
    write_atomic(out_dir / f"{name}.speedscope.json", json.dumps(speedscope) + "\n")
    return {
        "samples": shares.samples,
        "strategy_share": shares.strategy_share,
        "callsite_share": shares.callsite_share,
        "gc_share": gc_share,
        "gc_share_source": gc_source,
        "flamegraph": f"{name}.svg",
        "speedscope": f"{name}.speedscope.json",
        "raw": f"{name}.raw.txt",
        "gc_probe": f"{name}.gc.json",
    }
