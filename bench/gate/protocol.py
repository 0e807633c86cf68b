"""The gate's cross-tree contract: what a base tree understands, and how the candidate speaks to it.

A gate runs the base tree's own worker (`bench.worker gate`) and instruction target
(`bench.instr_target`) with a configuration and benchmark names the candidate chose. Trees
differ: a PR adds a configuration key, removes one, renames a benchmark parameter. So before
measuring, the gate asks the base

    python -m bench.gate.protocol        (run in the base tree; prints JSON)

which configuration keys (with defaults) its RunConfig has, how it names the gated benchmarks
(parameter keys per kind), and which options its instruction target takes. The candidate then
sends only keys the base knows; a key the base lacks is dropped when it only sets how much is
measured (RunConfig.repetition_keys(): the shared keys and each suite's own) or when the candidate asks for what a tree without it measured
(its default, or config.ABSENT_MEANS); otherwise the gate stops with exit 2 naming the key.
Names are translated with bench.base.names.RENAMED_PARAMS / ADDED_PARAMS the same way. A base that
cannot answer predates the protocol: the gate says which base is the oldest it supports.

Keep this module's output backward compatible: later candidates read it from this tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.base.errors import DataError
from bench.base.names import ADDED_PARAMS, RENAMED_PARAMS, BenchName
from bench.config.runconfig import ABSENT_MEANS
from bench.suites import default_config
from bench.suites.gate import NAME_KEYS
from bench.suites.gate.run_instructions import OPTIONS

PROTOCOL = 1
# The first commit whose tree answers `python -m bench.gate.protocol` (older bases are refused).
OLDEST_BASE = "baf8bd907eaa (protocol 1)"
QUERY_TIMEOUT_S = 120


def describe() -> dict[str, Any]:
    """This tree's side of the contract."""

    defaults = json.loads(default_config(suites=("gate",)).to_json())
    return {
        "protocol": PROTOCOL,
        "config_defaults": defaults,
        "names": {kind: list(keys) for kind, keys in NAME_KEYS.items()},
        "instr_options": list(OPTIONS),
    }


@dataclass(frozen=True)
class Base:
    """What a base tree said about itself, and what the candidate sends it."""

    label: str
    protocol: int
    config_defaults: dict[str, Any]
    names: dict[str, list[str]]
    instr_options: tuple[str, ...]
    notes: list[str] = field(default_factory=list)

    def config_json(self, candidate: Any) -> str:
        """The candidate's RunConfig as the base can read it; DataError (exit 2) naming a key
        whose difference changes what is measured."""

        mine = json.loads(candidate.to_json())
        fresh = default_config(suites=tuple(mine["suites"]))
        defaults = json.loads(fresh.to_json())
        repetition = fresh.repetition_keys()
        send: dict[str, Any] = {}
        for key, value in mine.items():
            if key in self.config_defaults:
                send[key] = value
                continue
            if key in repetition:
                self.note(f"configuration key {key} is not in the base (how much, not what)")
                continue
            implied = json.loads(json.dumps(ABSENT_MEANS.get(key, defaults[key])))
            if value == implied:
                self.note(
                    f"configuration key {key} is not in the base, which measures as {key}={implied!r}"
                )
                continue
            raise DataError(
                f"base {self.label} has no configuration key {key!r}: the candidate's "
                f"{key}={value!r} changes what is measured (a tree without it measures "
                f"{key}={implied!r}); gate against a newer base or set {key} to {implied!r}"
            )
        for key in self.config_defaults:
            if key not in mine:
                self.note(
                    f"configuration key {key} is gone from the candidate; the base uses its default"
                )
        return json.dumps(send, sort_keys=True)

    def name(self, candidate_name: str) -> str:
        """A gated benchmark's name as the base writes it; DataError naming the parameter when
        the base cannot measure what the candidate does."""

        bench = BenchName.parse(candidate_name)
        keys = self.names.get(bench.kind)
        if keys is None:
            raise DataError(
                f"base {self.label} gates no {bench.kind} benchmarks ({candidate_name})"
            )
        renamed = RENAMED_PARAMS.get(bench.kind, {})
        added = ADDED_PARAMS.get(bench.kind, {})
        params: dict[str, str] = {}
        for key, value in bench.params:
            if key in keys:
                params[key] = value
            elif renamed.get(key) in keys:
                params[renamed[key]] = value
                self.note(f"{bench.kind} parameter {key} is {renamed[key]} in the base")
            elif added.get(key) == value:
                self.note(f"{bench.kind} parameter {key}={value} is implicit in the base")
            else:
                raise DataError(
                    f"{candidate_name}: base {self.label} names {bench.kind} benchmarks by "
                    f"{', '.join(keys)}; the candidate's {key}={value} changes what is measured"
                )
        missing = [k for k in keys if k not in params]
        if missing:
            raise DataError(
                f"{candidate_name}: base {self.label} also names {bench.kind} benchmarks by "
                f"{', '.join(missing)}, which this candidate does not know"
            )
        return str(BenchName(bench.kind, bench.strategy, tuple((k, params[k]) for k in keys)))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def query(tree: Path, label: str) -> Base:
    """Ask a base tree for its side of the contract (in a fresh interpreter in that tree)."""
    cmd = [sys.executable, "-m", "bench.gate.protocol"]
    try:
        proc = subprocess.run(
            cmd, cwd=tree, capture_output=True, text=True, check=False, timeout=QUERY_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise DataError(f"base {label} did not answer the gate protocol query") from None
    if proc.returncode != 0:
        raise DataError(
            f"base {label} predates the gate's cross-tree protocol; the oldest base this gate "
            f"supports is {OLDEST_BASE} (gate against a newer base, or use --baseline FILE)"
        )
    try:
        raw = json.loads(proc.stdout)
        return Base(
            label=label,
            protocol=int(raw["protocol"]),
            config_defaults=dict(raw["config_defaults"]),
            names={str(k): [str(x) for x in v] for k, v in raw["names"].items()},
            instr_options=tuple(str(x) for x in raw.get("instr_options", ())),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"base {label}: unreadable gate protocol answer ({exc})") from None


def myself(label: str = "candidate") -> Base:
    """This tree as a Base (the candidate and A/A sides: nothing to translate)."""
    raw = describe()
    return Base(
        label=label,
        protocol=raw["protocol"],
        config_defaults=raw["config_defaults"],
        names=raw["names"],
        instr_options=tuple(raw["instr_options"]),
    )


def main() -> int:
    print(json.dumps(describe(), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
