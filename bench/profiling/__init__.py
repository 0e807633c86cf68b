"""Profiling: py-spy flamegraphs of each strategy's steady-state scheduler loop.

stacks.py   py-spy's collapsed stacks, and the strategy-code / call-site / GC shares
render.py   collapsed stacks -> speedscope JSON and an SVG flamegraph
run.py      profile_strategies(): py-spy over workload.py, one run per strategy
workload.py the profiled process: one strategy's steady-state scheduler loop
(the `python -m bench profile` command: bench/commands/profile.py)
"""

from __future__ import annotations

from bench.profiling.run import ProfileError, profile_strategies
from bench.profiling.stacks import ROOT_FUNCTION, compute_shares, parse_collapsed

__all__ = [
    "ROOT_FUNCTION",
    "ProfileError",
    "compute_shares",
    "parse_collapsed",
    "profile_strategies",
]
