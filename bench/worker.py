"""Entry point kept at this path: the runner, and gates in other trees, start
`python -m bench.worker SUITE CONFIG_JSON_FILE OUTPUT_JSON_FILE WORKER_INDEX`. The worker lives
in bench.orchestration.worker."""

from __future__ import annotations

import sys

from bench.orchestration.worker import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
