"""The regression gate: does the working tree slow the scheduler's hot path against a baseline?

config.py        what is gated, from pyproject.toml's [tool.reqstate-bench.gate]
git.py           the baseline worktree and the candidate's copy
wall.py          wall-clock mode: the gate's worker suite in each tree, round by round
suite.py         that worker suite (run by `python -m bench.worker gate` in each tree)
instructions.py  instruction mode: callgrind counts of bench.instr_target in each tree
instr_target.py  the deterministic workload instruction mode counts
judge.py         one rule object per mode; stored baselines
render.py        terminal table and markdown
run.py           run_gate(): everything above, in order
selftest.py      calibration: false-alarm and detection rates, measured

This package's __init__ imports nothing: workers and callgrind targets import pieces of it.
"""
