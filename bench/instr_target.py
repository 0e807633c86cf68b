"""Entry point kept at this path: gates run `python -m bench.instr_target` in every tree they
compare, this one included when it is a base. The target lives in bench.suites.gate.run_instructions."""

from __future__ import annotations

import sys

from bench.suites.gate.run_instructions import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
