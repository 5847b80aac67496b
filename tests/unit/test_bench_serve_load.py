"""Smoke test of bench/serve_load.py: the quick run (one server process over PostgreSQL, 1
and 4 clients, 1 s a cell) reports every operation alone, with a writer and with the writer
stalled, with no error and nothing of another tenant served; the stalled writer's last write
goes through once the lock is released.

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
    for key, cells in results.items():
        assert set(cells) == {"alone", "free", "stalled"}
        for mode, cell in cells.items():
            assert cell.errors == 0 and cell.leaks == 0, (key, mode)
            assert sum(len(v) for v in cell.times.values()) > 0, (key, mode)
            assert all(t > 0 for v in cell.times.values() for t in v), (key, mode)
            if mode == "alone":
                assert not cell.writes
            else:  # the stalled cell's last write went through once the lock went
                assert cell.writes and set(cell.write_statuses) == {201}, (key, mode)
