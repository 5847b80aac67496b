"""The core's SQLite index against the memory index on SciFact (BM25): the same ranking (both
search the same in-memory mirror), what persistence costs to load and to open again, and the
file's size.

Run: ``PYTHONPATH=src python bench/sqlite_index.py`` (about a minute; no extra needed;
``--publish`` writes ``bench/published/sqlite_index.json`` for the reference page).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import load_scifact, ndcg_at_k, p50_p99_ms  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402
from bastion.knowledge.index.sqlite import FILE_NAME, SQLiteIndex  # noqa: E402


def _files(data: object) -> list[FileToIndex]:
    out = []
    for doc_id, title, text in zip(data.doc_ids, data.titles, data.texts, strict=True):  # type: ignore[attr-defined]
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        out.append(FileToIndex(f"/corpus/{doc_id}.md", body.encode()))
    return out


def _run(knowledge: Knowledge, data: object) -> tuple[float, tuple[float, float]]:
    runs: dict[str, list[str]] = {}
    took = []
    for qid, query in zip(data.query_ids, data.queries, strict=True):  # type: ignore[attr-defined]
        started = time.perf_counter()
        hits = asyncio.run(knowledge.search(query, mode="bm25", k=100))
        took.append(time.perf_counter() - started)
        runs[qid] = list(dict.fromkeys(h.chunk.doc.path[8:-3] for h in hits))
    return ndcg_at_k(runs, data.qrels), p50_p99_ms(took)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--publish", action="store_true", help="bench/published/sqlite_index.json")
    publish = parser.parse_args().publish
    rows: list[list[str | int | float | None]] = []
    data = load_scifact()
    files = _files(data)
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (
            ("memory", lambda: Knowledge(MemoryIndex())),
            ("sqlite", lambda: Knowledge(SQLiteIndex(Path(tmp) / FILE_NAME))),
        ):
            knowledge = make()
            started = time.perf_counter()
            asyncio.run(knowledge.index_files(files))
            knowledge.index.prepare()
            load = time.perf_counter() - started
            ndcg, (p50, p99) = _run(knowledge, data)
            line = (
                f"{name:7} load {load:5.1f} s  nDCG@10 {ndcg:.4f}  search p50 {p50:.2f} ms "
                f"p99 {p99:.2f} ms"
            )
            row: list[str | int | float | None] = [name, round(load, 2), round(ndcg, 4)]
            row += [round(p50, 2), round(p99, 2), None, None, None]
            if name == "sqlite":
                knowledge.close()
                size = sum(
                    p.stat().st_size for p in Path(tmp).iterdir() if p.name.startswith(FILE_NAME)
                )
                started = time.perf_counter()
                again = Knowledge(SQLiteIndex(Path(tmp) / FILE_NAME))
                reopen = time.perf_counter() - started
                same, _ = _run(again, data)
                line += f"  reopen {reopen:.2f} s (nDCG@10 {same:.4f})  file {size / 1e6:.1f} MB"
                again.close()
                row[5:] = [round(reopen, 3), round(same, 4), round(size / 1e6, 1)]
            print(line, flush=True)
            rows.append(row)
    if publish:
        from _results import Result, Table, machine, now, write_result

        columns = ["index", "load s", "nDCG@10", "p50 ms", "p99 ms", "reopen s"]
        columns += ["nDCG@10 reopened", "file MB"]
        size = f"BM25 over {len(data.doc_ids):,} SciFact documents"  # type: ignore[attr-defined]
        result = Result(
            bench="sqlite_index",
            title="The core's SQLite index against the memory index",
            command="PYTHONPATH=src python bench/sqlite_index.py --publish",
            machine=machine(),
            date=now(),
            tables=[Table(title=size, columns=columns, rows=rows)],
        )
        print(write_result(result))


if __name__ == "__main__":
    main()
