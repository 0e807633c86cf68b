"""Driver processes: one at a time, or several in lockstep.

A driver (bench/real/driver/main.py) runs in a revision's environment with the revision on
sys.path; it never raises: a failure is an output with `ok` false, and a crash or a timeout
becomes one here.

Lockstep: two revisions cannot share an interpreter, so their processes cannot interleave
iteration by iteration as the step suite's schedulers do. Instead every process of a group is
started at once, built and warmed up until its KV cache is steady; each says `@steady N` (the
iteration it settled at) and waits; once all have, the harness names the latest, K, and every
process warms up to iteration K, so all measure the same iterations of the request stream.
Then they measure their windows in turns: before window i each driver says `@window i` and
waits; the harness lets each go in turn, waiting for it to reach its next window before the
next one goes. The turns' orders are a Williams design over the processes (`turn_orders`, the
processes relabelled at random on every pass through the design): every process follows every other equally
often, so no side's iterations follow one kind of code more than another's do (a seeded shuffle
with an A/A copy of the candidate put candidate code before the baseline 8 times in 9, before
the candidate 4 in 9). So window i of every
revision is measured within a second or so of the others', never at the same time (the one
measuring has the machine; the others sleep), and a slow drift of the machine, which moves a
shared 2-core host by ±10% over seconds to minutes here, lands on every revision alike.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol


class Env(Protocol):
    """What runs a driver: a revision's environment (bench.real.venv.Env)."""

    @property
    def interpreter(self) -> Path: ...

    def sys_path(self, tree: Path | None) -> list[str]: ...


DEFAULT_TIMEOUT_S = 3600.0
# Processes of one lockstep group: the gate's four sides (bench.real.gate.SIDES), and a history
# round's anchor, its copy and two commits. A process's iteration costs more the more others run
# between two of its own, and a change reads larger (docs/REAL.md, "What runs between two
# iterations": -5.39% with 1 other, -6.14% with 3, a history round of 13 processes -7.02%), so
# every command that sizes a commit runs groups of this many, for one commit one size.
LOCKSTEP_GROUP = 4
# where the torch distributed ports of a group are drawn from: below the kernel's ephemeral
# range, so that no port another process was just handed (PortArgs takes a free one by binding
# port 0 and closing it) can be the one a driver binds next; how many below it is this
# project's choice (a group needs at most a few dozen; 8,000 leaves room for other jobs' ports)
PORT_SPAN = 8000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def stop(proc: subprocess.Popen[str]) -> None:
    """A child process ended: asked to (SIGTERM), then made to after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class DriverProcess:
    def __init__(
        self,
        env: Env,
        tree: Path | None,
        job: dict[str, Any],
        *,
        events: queue.Queue[tuple[int, str]] | None = None,
        index: int = 0,
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="reqstate-real-"))
        self.out_path = self.tmp / "out.json"
        job_path = self.tmp / "job.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        cmd = [
            str(env.interpreter),
            "-m",
            "bench.real.driver.main",
            str(job_path),
            str(self.out_path),
        ]
        pyenv = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(env.sys_path(tree)),
            "PYTHONHASHSEED": str(job.get("hash_seed", 0)),
        }
        pyenv.pop("VIRTUAL_ENV", None)
        lockstep = bool(job.get("plan", {}).get("lockstep"))
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if lockstep else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=pyenv,
            cwd=self.tmp,
        )
        self.index = index
        self.tail: list[str] = []
        self.events = events
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            if line.startswith("@window ") and self.events is not None:
                self.events.put((self.index, line.removeprefix("@window ")))
            elif line.startswith("@steady ") and self.events is not None:
                self.events.put((self.index, "steady " + line.removeprefix("@steady ")))
            else:
                self.tail = [*self.tail[-30:], line]
        if self.events is not None:
            self.events.put((self.index, "exit"))

    def go(self, line: str = "go") -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def kill(self) -> None:
        stop(self.proc)

    def result(self, timeout: float | None = None) -> dict[str, Any]:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = -1
        self.reader.join(timeout=10)
        for pipe in (self.proc.stdin, self.proc.stderr):
            if pipe is not None and not self.reader.is_alive():
                try:
                    pipe.close()
                except OSError:
                    pass
        try:
            if self.out_path.is_file():
                out: dict[str, Any] = json.loads(self.out_path.read_text(encoding="utf-8"))
                return out
            last = next((ln for ln in reversed(self.tail) if ln.strip()), f"exit status {rc}")
            if rc == -1:
                last = f"no answer in {timeout:.0f} s" if timeout else last
            return {"ok": False, "kind": "crash", "message": f"the driver died: {last.strip()}"}
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def run_one(
    env: Env,
    tree: Path | None,
    job: dict[str, Any],
    *,
    log: list[str] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    proc = DriverProcess(env, tree, job)
    try:
        out = proc.result(timeout)
    except BaseException:
        proc.kill()
        raise
    if log is not None:
        log.extend(proc.tail[-10:])
    return out


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def distinct_ports(n: int, rng: random.Random) -> list[int]:
    """n different free TCP ports below the ephemeral range, one per driver of a group: each
    binds its own for torch distributed's store. Left to the revision, every driver takes a free
    port of the ephemeral range at start-up, and two started together can be handed the same
    one (a 13-process history round failed on EADDRINUSE so)."""
    low = _ephemeral_low()
    start = max(1024, low - PORT_SPAN)
    candidates = list(range(start, low))
    rng.shuffle(candidates)
    ports = list(itertools.islice(filter(_free, candidates), n))
    if len(ports) < n:
        raise RuntimeError(f"fewer than {n} free ports in {start}..{low - 1}")
    return ports


def williams_rows(n: int) -> list[list[int]]:
    """A Williams design: orders of 0..n-1 in which every ordered pair (a before b, adjacent)
    occurs equally often (once in n rows for even n; twice in 2n rows, each row and its reverse,
    for odd n)."""
    if n <= 1:
        return [list(range(n))]
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [list(reversed(row)) for row in rows]


def turn_orders(n: int, rng: random.Random) -> Iterator[list[int]]:
    """The order of every turn, endlessly: the Williams rows, each pass through them under a new
    random relabelling of the n processes (within a row every process follows every other
    equally often; from one row's last to the next row's first is then random too)."""
    rows = williams_rows(n)
    label = list(range(n))
    while True:
        rng.shuffle(label)
        for row in rows:
            yield [label[x] for x in row]


def predecessors(turns: Sequence[int]) -> dict[int, dict[int, int]]:
    """For each process, how many of its turns followed each other process's (the turns in the
    order they ran; a process following itself is counted too)."""
    out: dict[int, dict[int, int]] = {}
    for before, now in itertools.pairwise(turns):
        row = out.setdefault(now, {})
        row[before] = row.get(before, 0) + 1
    return out


def run_lockstep(
    units: Sequence[tuple[Env, Path | None, dict[str, Any]]],
    rng: random.Random,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    on_settled: Callable[[Sequence[DriverProcess]], None] | None = None,
    turns: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Every unit's driver, started together, its measured windows taken in turns (see the
    module's docstring); the outputs in the units' order. A process that dies or fails ends
    its own turns; the others go on. `on_settled` is called with the processes once all have
    settled, before any goes on to measure (a profiler attaches there). `turns`, if given,
    receives the unit index of every measured window in the order they ran."""
    events: queue.Queue[tuple[int, str]] = queue.Queue()
    procs: list[DriverProcess] = []
    pending: dict[int, list[str]] = {i: [] for i in range(len(units))}
    deadline = time.time() + timeout

    def next_event(i: int) -> str:
        """Process i's next report: a window number, 'end' or 'exit'."""
        while not pending[i]:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError
            j, where = events.get(timeout=left)
            pending[j].append(where)
        return pending[i].pop(0)

    ports = distinct_ports(len(units), random.Random(rng.random()))
    try:
        for i, (env, tree, job) in enumerate(units):
            server = {"nccl_port": ports[i], **job.get("server", {})}
            job = {**job, "plan": {**job["plan"], "lockstep": True}, "server": server}
            procs.append(DriverProcess(env, tree, job, events=events, index=i))
        state = {i: next_event(i) for i in range(len(procs))}  # each settled, or gone
        settled = {i: int(w.split()[1]) for i, w in state.items() if w.startswith("steady ")}
        if settled:
            start = max(settled.values())
            if on_settled is not None:
                on_settled(procs)
            for i in settled:
                procs[i].go(f"start {start}")
            for i in settled:
                state[i] = next_event(i)  # at its first window
        orders = turn_orders(len(procs), rng)
        while True:
            live = {i for i, where in state.items() if where not in ("end", "exit")}
            if not live:
                break
            for i in (i for i in next(orders) if i in live):
                procs[i].go()
                if turns is not None:
                    turns.append(i)
                state[i] = next_event(i)
        return [p.result(timeout=120) for p in procs]
    except (TimeoutError, queue.Empty):
        for p in procs:
            p.kill()
        return [p.result(timeout=10) for p in procs]
    except BaseException:
        for p in procs:
            p.kill()
        raise
