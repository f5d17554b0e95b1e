# Two commands for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DIR ?= demo-out

.PHONY: demo test lint venv clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(BIN)/python -m clstream.demo --out $(DEMO_DIR)

test: venv
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) $(DEMO_DIR) build *.egg-info src/*.egg-info
