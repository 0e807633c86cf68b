"""Whether two runs measured the same thing, before anything compares them.

Two runs are comparable when everything that decides what a benchmark is agrees: every
configuration key but those that only set how much is measured (RunConfig.repetition_keys:
workers, values, budget, ...), each scheduler case's parameters as they ran, the device and the
request class, and the strategy set (the step suite interleaves every strategy iteration by
iteration, and the cold lookup regime builds every strategy's requests interleaved, so another
set is another experiment). `bench report --compare` refuses runs that differ in any of these
(one line, exit 2) unless `--force`, and then lists every difference in its header.

Differences of the machine (CPU, Python, torch, platform) do not change what is measured but
change the numbers: they are shown in the header, as pyperf warns on mixed runs.
"""

from __future__ import annotations

from typing import Any

from bench.core.scenarios import ABSENT_MEANS
from bench.report.load import RunData

# Environment fields that are part of what is measured (the others describe the machine).
MEASURED_ENV = ("device", "request_class", "sglang")
# Machine fields shown when they differ.
MACHINE_ENV = (
    "cpu",
    "cpu_count",
    "llc_bytes",
    "python",
    "python_implementation",
    "torch",
    "platform",
)


def _show(value: Any) -> str:
    text = str(value) if not isinstance(value, list) else "[" + ", ".join(map(str, value)) + "]"
    return text if len(text) <= 60 else text[:57] + "..."


def measurement_differences(base: RunData, head: RunData) -> list[str]:
    """What the two runs measured differently, one phrase each (empty: comparable)."""
    out: list[str] = []
    repetition = base.config.repetition_keys() | head.config.repetition_keys()
    bc, hc = base.manifest.config, head.manifest.config
    for key in sorted(set(bc) | set(hc)):
        if key not in repetition and bc.get(key) != hc.get(key):
            out.append(f"{key} (base {_show(bc.get(key))}, head {_show(hc.get(key))})")
    bcases = {c.key: c.values for c in base.manifest.cases}
    hcases = {c.key: c.values for c in head.manifest.cases}
    for key in sorted(set(bcases) & set(hcases)):
        b, h = {**ABSENT_MEANS, **bcases[key]}, {**ABSENT_MEANS, **hcases[key]}
        changed = [k for k in sorted(set(b) | set(h)) if b.get(k) != h.get(k)]
        if changed:
            detail = ", ".join(f"{k} {_show(b.get(k))} -> {_show(h.get(k))}" for k in changed[:4])
            more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
            out.append(f"scenario {key} parameters ({detail}{more})")
    be, he = base.environment.to_json(), head.environment.to_json()
    for key in MEASURED_ENV:
        if be.get(key) and he.get(key) and be[key] != he[key]:
            out.append(f"{key} (base {_show(be[key])}, head {_show(he[key])})")
    bs, hs = set(base.strategies), set(head.strategies)
    if bs != hs:
        parts = []
        if bs - hs:
            parts.append("only in base: " + ", ".join(sorted(bs - hs)))
        if hs - bs:
            parts.append("only in head: " + ", ".join(sorted(hs - bs)))
        out.append(
            f"strategies ({'; '.join(parts)}: the step suite and the cold lookup regime measure "
            "every strategy together)"
        )
    return out


def machine_differences(base: RunData, head: RunData) -> list[str]:
    """The machine fields that differ; a field only one of the runs records (one older runs
    lack, such as llc_bytes) is not a difference."""
    be, he = base.environment.to_json(), head.environment.to_json()
    return [
        f"{k} (base {_show(be[k])}, head {_show(he[k])})"
        for k in MACHINE_ENV
        if k in be and k in he and be[k] != he[k]
    ]


class NotComparable(ValueError):
    """The runs measured different things (bench report --compare: one line, exit 2)."""


def check(base: RunData, head: RunData, *, force: bool) -> list[str]:
    """The measurement differences (listed in the comparison's header when forced); raises
    NotComparable without force."""
    found = measurement_differences(base, head)
    if found and not force:
        raise NotComparable(
            f"the runs measured different things: {'; '.join(found)}; compare runs of one "
            "configuration, or add --force to compare anyway (the header lists the differences)"
        )
    return found
