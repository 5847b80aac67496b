# One command per task. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bastion demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) browser
	$(BIN)/python -m pytest -q

test: lint typecheck unit

# Debian's Chromium for the browser tests (tests/server/test_browser.py): Playwright (a dev
# dependency) drives it through executable_path, so no browser is ever downloaded.
.PHONY: browser
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser: $(STAMP)
	command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python bench/fs_ops.py
	$(BIN)/python bench/search_scifact.py
	$(BIN)/python bench/embed_scifact.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
