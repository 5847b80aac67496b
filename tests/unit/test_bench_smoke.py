"""Smoke test of bench/fs_ops.py: the smallest run yields every row with positive numbers.

No timing assertions: this only checks that the benchmark still runs against the current API.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fs_ops.py"

EXPECTED_ROWS = {
    "read.os",
    "read.open",
    "read.local_store",
    "read.workspace",
    "read.sync",
    "write.os_durable",
    "write.open_plain",
    "write.local_store",
    "write.workspace",
    "write.sync",
    "mem.write",
    "mem.read",
    "mem.stat",
    "mem.list",
    "mem.grep",
    "mem.glob",
}


def _load() -> ModuleType:
    name = "bastion_bench_fs_ops"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_smallest_run_reports_every_row(tmp_path: Path) -> None:
    bench = _load()
    out = tmp_path / "fs_ops.md"
    base = tmp_path / "work"
    base.mkdir()
    argv = ["--files", "12", "--rounds", "1", "--ops", "3", "--dir", str(base), "--out", str(out)]

    results = bench.main(argv)

    assert set(results.rows) == EXPECTED_ROWS
    for row_id, row in results.rows.items():
        assert row.per_op_ns, row_id
        assert all(t > 0 for t in row.per_op_ns), row_id
        assert row.median_us > 0 and row.ops_per_s > 0 and row.cpu_us >= 0, row_id
        if row.baseline is not None:
            assert row.ratio is not None and row.ratio > 0, row_id
        assert row.label in results.markdown, row_id
    for key in ("cpu", "cores", "python", "filesystem"):
        assert results.machine[key], key
    report = out.read_text(encoding="utf-8")
    for title in ("**Read a 4 KiB file", "**Overwrite a 4 KiB file", "**MemoryStore mount"):
        assert title in report
    assert list(base.iterdir()) == [], "the benchmark leaves no files behind"
