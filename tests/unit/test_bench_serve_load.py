"""Smoke test of bench/serve_load.py: the quick run (one server process over PostgreSQL, 1
and 4 clients, 1 s a cell) reports every operation, free and stalled, with no error and
nothing of another tenant served, and the stalled cells' writes did wait for the held lock
and then went through.

No timing assertions: this only checks that the benchmark still runs against the server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "serve_load.py"

pytestmark = pytest.mark.slow


def _load() -> ModuleType:
    name = "bastion_bench_serve_load"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_the_quick_run_measures_every_cell(pg_server: Any) -> None:
    results = _load().main(["--quick"], pg=pg_server)

    assert set(results) == {"1x1", "1x4"}
    for key, (free, stalled) in results.items():
        for cell in (free, stalled):
            assert cell.errors == 0 and cell.leaks == 0, key
            assert sum(len(v) for v in cell.times.values()) > 0, key
            assert all(t > 0 for v in cell.times.values() for t in v), key
            assert set(cell.write_statuses) == {201}, key  # the last write went through
            assert cell.writes, key
