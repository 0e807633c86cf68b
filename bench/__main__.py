"""Command line: python -m bench {list,run,report,gate,profile}."""

from __future__ import annotations

import sys

from bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
