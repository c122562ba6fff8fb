# Two commands for a fresh machine: `make run` (the service) and `make test` (everything CI checks).
# `make run` installs the package and its runtime dependencies only; `make test` (and `make
# setup`) add the development tools of the `dev` extra. Both are redone when pyproject.toml
# changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROJECT := $(shell cat pyproject.toml | sha1sum | cut -c1-12)
RUN_STAMP := $(VENV)/.installed-run-$(PROJECT)
DEV_STAMP := $(VENV)/.installed-dev-$(PROJECT)

.PHONY: setup run test bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	rm -f $(VENV)/.installed-run-*
	$(BIN)/pip install --quiet -e .
	touch $@

# The dev extra includes everything serving needs, so it also counts as the run install.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	rm -f $(VENV)/.installed-dev-* $(VENV)/.installed-run-*
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@ $(RUN_STAMP)

setup: $(DEV_STAMP)

run: $(RUN_STAMP)
	$(BIN)/ofc serve

test: $(DEV_STAMP)
	bash scripts/check.sh

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

bench-quick: $(DEV_STAMP)
	$(BIN)/python -m bench --quick

clean:
	rm -rf $(VENV)
