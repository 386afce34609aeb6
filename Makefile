# Two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?=

.PHONY: help install test lint run bench clean

help:
	@echo "make run    start memhubd on copies of the example workspaces (PORT=N for another port)"
	@echo "make test   install into $(VENV) and run ruff + the whole test suite"
	@echo "make bench  run the benchmark scripts (needs memdsl for the ratios)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

install: $(VENV)/.installed

lint: install
	$(BIN)/ruff check .

# One worker per core, a test file at a time per worker (module fixtures start once),
# files in collection order so the long fault tests start first instead of last.
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

# Serves copies of examples/ seeded in the state dir, so the repository stays as it is.
run: install
	$(BIN)/memhubd run-examples $(if $(PORT),--port $(PORT))

bench: install
	$(BIN)/python bench/parse_lint.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
