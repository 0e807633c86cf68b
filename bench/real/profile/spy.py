"""py-spy attached to a running driver process: speedscope output with one frame per function
(`--function`: a frame's line is its function's first line), idle samples dropped (`--idle` is
not passed), sampled at `rate_hz` without pausing the process (`--nonblocking`: a blocking
sample stops every thread, which cost a 0.7 ms iteration 43% at 250 Hz). Started once every process of a lockstep group has settled
and before any measures (bench.real.process.run_lockstep's `on_settled`); it ends with the
process and writes its file then."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.base.errors import DataError, UsageError
from bench.base.timing import wall_s
from bench.profiling.run import PY_SPY_HINT, find_py_spy
from bench.real.process import stop

READY_TIMEOUT_S = 20.0  # py-spy's attach: it says "Sampling process" once it samples
END_TIMEOUT_S = 120.0
ATTACH_TRIES = 3  # after the process ends, for py-spy to write its file


def probe() -> None:
    """py-spy can read a process of this user (ptrace): tried on a child that sleeps, before
    anything is built or written; else one line with the fix (exit 2)."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], stdin=subprocess.DEVNULL
    )
    try:
        time.sleep(0.3)
        done = subprocess.run(
            [find_py_spy(), "dump", "--pid", str(child.pid)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        child.kill()
        child.wait()
    if done.returncode != 0:
        why = next(
            (ln.strip() for ln in (done.stderr + done.stdout).splitlines()[::-1] if ln.strip()),
            f"exit status {done.returncode}",
        )
        raise UsageError(f"py-spy cannot read this machine's processes: {why} ({PY_SPY_HINT})")


class Spy:
    def __init__(self, pid: int, output: Path, rate_hz: int) -> None:
        self.output = output
        self.pid = pid
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            [
                find_py_spy(),
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate_hz),
                "--function",
                "--format",
                "speedscope",
                "--output",
                str(output),
                "--nonblocking",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines = [*self.lines[-20:], line.rstrip("\n")]
            if "Sampling process" in line:
                self._ready.set()
        self._ready.set()

    def wait_ready(self) -> bool:
        """Until py-spy samples: False if it ended or did not start in time (why() says why)."""
        t0 = wall_s()
        while not self._ready.wait(0.05):
            if wall_s() - t0 > READY_TIMEOUT_S:
                self.stop()
                self.lines.append(f"no sample in {READY_TIMEOUT_S:.0f} s")
                return False
        return not (self.proc.poll() is not None and not self.output.exists())

    def why(self) -> str:
        """py-spy's error line (its first line naming an error), else its last line."""
        lines = [ln.strip() for ln in self.lines if ln.strip()]
        named = [ln for ln in lines if "error" in ln.lower() or "permission" in ln.lower()]
        return (named or lines or ["no output"])[0 if named else -1]

    def stop(self) -> None:
        stop(self.proc)

    def result(self) -> dict[str, Any] | None:
        """The speedscope document py-spy wrote when the process ended (None if it wrote none)."""
        try:
            self.proc.wait(timeout=END_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
        self._reader.join(timeout=5)
        try:
            doc: dict[str, Any] = json.loads(self.output.read_text(encoding="utf-8"))
            return doc
        except (OSError, ValueError):
            return None


def attach(pid: int, output: Path, rate_hz: int, tries: int = ATTACH_TRIES) -> Spy:
    """py-spy sampling process `pid`, tried `tries` times (an attach to a busy process can fail
    once); a py-spy denied the process is the user's to fix (exit 2), any other failure the
    run's (DataError: the rounds already kept stay)."""
    why = ""
    for _ in range(tries):
        spy = Spy(pid, output, rate_hz)
        if spy.wait_ready():
            return spy
        why = spy.why()
        if "permission" in why.lower() or "ptrace" in why.lower():
            raise UsageError(f"py-spy cannot profile the driver: {why} ({PY_SPY_HINT})")
    raise DataError(f"py-spy did not attach to process {pid} in {tries} tries: {why}")
