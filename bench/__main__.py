"""Command line: python -m bench {list,run,selftest-aa,selfcheck,scenarios,workload,report,gate,
profile,target} (bench/commands/main.py dispatches; `python -m bench --help` lists them)."""

from __future__ import annotations

import sys

from bench.commands.main import main

if __name__ == "__main__":
    sys.exit(main())
