"""bench/report.py renders the reference page of benchmarks from bench/published/*.json, and the
committed page is what the committed results render (docs/reference/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

FIXTURE = {
    "bench": "demo_bench",
    "title": "A demo benchmark",
    "command": ".venv/bin/python bench/demo_bench.py --publish",
    "machine": {"cpu": "Test CPU", "cores": "8 (usable: 4)", "load average at start": "6.50 1 1"},
    "date": "2026-11-28T12:00Z",
    "notes": ["One note."],
    "tables": [
        {
            "title": "Reads",
            "columns": ["case", "ops", "µs/op", "ratio", "p | q"],
            "rows": [["raw", 12345, 1234.5, 1.0, None], ["a|b", 7, 0.01234, 12.345, "x"]],
            "notes": ["Under the table."],
        }
    ],
}

EXPECTED = """## A demo benchmark

Command: `.venv/bin/python bench/demo_bench.py --publish`

Run: 2026-11-28T12:00Z. Machine: cpu: Test CPU; cores: 8 (usable: 4); load average at start: 6.50 1 1.

*Measured on a busy machine (load 6.5 on 4 cores): compare the rows of this run with each other; the absolute times are slower than on a quiet machine.*

One note.

**Reads**

| case | ops | µs/op | ratio | p \\| q |
|---|---:|---:|---:|---:|
| raw | 12,345 | 1,234 | 1.00 | - |
| a\\|b | 7 | 0.0123 | 12.35 | x |

Under the table.
"""


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_a_result_file_renders_as_its_section(tmp_path: Path) -> None:
    report = _load("report")
    results = tmp_path / "published"
    results.mkdir()
    (results / "demo_bench.json").write_text(json.dumps(FIXTURE), encoding="utf-8")
    page = tmp_path / "benchmarks.md"
    assert report.main(["--results", str(results), "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith(report.HEADER)
    assert text == report.HEADER + "\n" + EXPECTED
    # --check: the page is current; changed results make it stale
    assert report.main(["--results", str(results), "--page", str(page), "--check"]) == 0
    changed = dict(FIXTURE, date="2026-11-29T12:00Z")
    (results / "demo_bench.json").write_text(json.dumps(changed), encoding="utf-8")
    assert report.main(["--results", str(results), "--page", str(page), "--check"]) == 1


def test_a_written_result_reads_back_the_same(tmp_path: Path) -> None:
    results = _load("_results")
    data = dict(FIXTURE, tables=[results.Table(**t) for t in FIXTURE["tables"]])  # type: ignore[arg-type]
    result = results.Result(**data)
    path = results.write_result(result, tmp_path)
    assert path == tmp_path / "demo_bench.json"
    assert results.read_result(path) == result
    # a row a line, so that a new run diffs row by row
    assert '  ["raw", 12345, 1234.5, 1.0, null],\n' in path.read_text(encoding="utf-8")


def test_a_printed_markdown_report_becomes_notes_and_tables() -> None:
    results = _load("_results")
    notes, tables = results.from_markdown(
        "Corpus: 10 docs\n\n| system | nDCG |\n|---|---:|\n| a | 0.5 |\n\nafter\n\n"
        "| fusion | x |\n|---|---|\n| rrf | 1 |\n"
    )
    assert notes == ["Corpus: 10 docs"]
    assert [(t.columns, t.rows, t.notes) for t in tables] == [
        (["system", "nDCG"], [["a", "0.5"]], ["after"]),
        (["fusion", "x"], [["rrf", "1"]], []),
    ]


def test_the_committed_page_is_what_the_committed_results_render() -> None:
    report = _load("report")
    assert report.main(["--check"]) == 0
    published = sorted((BENCH / "published").glob("*.json"))
    assert len(published) >= 3
    for path in published:
        result = json.loads(path.read_text(encoding="utf-8"))
        assert (BENCH / f"{result['bench']}.py").is_file(), path.name
        assert path.stem == result["bench"]
        assert "--publish" in result["command"]
