# pilothouse: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test lint unit protos bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## run: install, validate and serve the example mesh
run: install
	$(BIN)/pilothouse validate examples/
	$(BIN)/pilothouse serve --config examples/

## lint: ruff and mypy --strict
lint: install
	$(BIN)/ruff check src tests bench proto
	$(BIN)/mypy --strict src

## test: install, lint, then the whole test suite
test: lint
	$(BIN)/pytest -q

## protos: regenerate src/pilothouse/api from proto/
protos: install
	$(BIN)/python proto/generate.py src/pilothouse/api

## bench: run the benchmarks and rewrite BENCHMARKS.md
bench: install
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
