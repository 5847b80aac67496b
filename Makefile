# One command per task. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit first-hour bench clean lock

# constraints.txt pins every version the install resolves to: a fresh machine installs the same
# tree in about a minute instead of letting pip backtrack through the whole [dev] graph.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bastion demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples tools
	$(BIN)/ruff format --check src tests bench examples tools

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers (pytest-xdist): most tests wait on subprocesses, servers and the disk, so two
# workers halve the wall time on a 2-core machine. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
unit: $(STAMP) browser
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=15

# The light core from a fresh `python3 -m venv` (its own pip) to a first governed answer:
# install with no extra, then init, config check, put, index, search, ask, grep, demo.
first-hour:
	.ci/first-hour

test: lint typecheck unit first-hour

# Debian's Chromium for the browser tests (tests/server/test_browser.py): Playwright (a dev
# dependency) drives it through executable_path, so no browser is ever downloaded.
.PHONY: browser
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser: $(STAMP)
	command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]'
	$(BIN)/python bench/fs_ops.py
	$(BIN)/python bench/search_scifact.py
	$(BIN)/python bench/embed_scifact.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

# Re-resolve constraints.txt after a change to the dependencies in pyproject.toml: start from the
# pinned tree (fast), let pip add or move only what pyproject.toml now asks for, freeze the result.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --upgrade pip
	.lock-venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]' || true
	.lock-venv/bin/python -m pip install --quiet -e '.[dev,bench]'
	.lock-venv/bin/python -m pip check
	{ sed -n '1,3p' constraints.txt; .lock-venv/bin/python -m pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .lock-venv
