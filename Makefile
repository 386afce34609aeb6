# Two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: help install test lint run bench clean

help:
	@echo "make run    start memhubd on the bundled example workspaces"
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

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

run: install
	$(BIN)/memhubd run-examples

bench: install
	$(BIN)/python bench/parse_lint.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
