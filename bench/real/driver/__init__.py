"""The driver: runs inside a revision's environment (bench/real/venv.py), in worker processes
of its own. It imports the standard library, the revision and what the revision imports, and
from this harness only bench.base.timing (the one clock) and itself: nothing here may import
torch or sglang at module level, since the harness process imports none of them.
"""
