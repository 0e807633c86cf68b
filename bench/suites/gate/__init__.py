"""gate: the wall-clock gate's worker suite: the gated step and lookup benchmarks, interleaved.

The gate starts `python -m bench.worker gate CONFIG OUT INDEX` in each tree it compares (so
this suite must keep working when this tree is a gate's base). The configuration's
`extra["gate"]` carries what matters here: the lookup ops and size. Names are those of the
step and lookup suites (NAME_KEYS). run_instructions.py is the deterministic workload the instruction
mode counts under callgrind (`python -m bench.instr_target`, a shim at that path).
"""

from __future__ import annotations

NAME = "gate"
ORDER = 100
KIND = "gate"  # it writes the step and lookup suites' names (NAME_KEYS)
PUBLIC = False  # run by the gate itself, never by `bench run --suite`
# Gated lookups run in the warm regime: the steadiest figure, and the one callgrind counts.
GATE_REGIME = "warm"
# The parameters of the names this suite writes, per kind, in order: part of the cross-tree
# contract (bench/gate/protocol.py); a test holds the suite to it.
SHARED = ("NAME_KEYS", "GATE_REGIME", "GATED", "STEP", "LOOKUP")
# The suites whose benchmarks it gates (and whose options it runs them with): their names, and
# the kinds of the names it writes.
GATED = STEP, LOOKUP = ("step", "lookup")
NAME_KEYS: dict[str, tuple[str, ...]] = {
    STEP: ("scenario", "pattern"),
    LOOKUP: ("op", "live", "regime"),
}
