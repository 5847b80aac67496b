"""Smoke test of bench/sync_facade.py: the smallest run yields every case with positive
numbers (no timing assertions: it only checks that the benchmark runs against the API)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sync_facade.py"


def _load() -> ModuleType:
    name = "bastion_bench_sync_facade"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_smallest_run_reports_every_case(tmp_path: Path) -> None:
    out = tmp_path / "facade.md"
    cases = _load().main(["--quick", "--rounds", "1", "--ops", "3", "--out", str(out)])
    assert {(c.group, c.id) for c in cases} == {
        ("read", "raw"),
        ("stat", "raw"),
        *(
            (group, kind)
            for group in ("read", "stat", "write", "sqlite read")
            for kind in ("async", "sync", "old")
        ),
    }
    for case in cases:
        assert case.wall_ns and all(t > 0 for t in case.wall_ns), case.id
    text = out.read_text(encoding="utf-8")
    assert "x async" in text and "facade" in text
