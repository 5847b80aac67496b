"""Operations per second through a Workspace, per store, with 1 and 4 processes.

Each cell runs N worker processes (spawned) against one backend for a fixed time; each worker
builds its own ``Workspace`` over its own store object and counts the operations it completes:

* ``read``: ``read_bytes`` of a 4 KiB file (100 files, round robin);
* ``write``: ``write`` (overwrite) of a 4 KiB file of its own;
* ``list``: ``list`` of a directory of 100 files;
* ``search``: ``Workspace.search(mode="bm25", k=10)`` over a shared keyword index of 2,000
  SciFact documents (memory index: each process holds its own copy; PostgreSQL index: one
  shared database).

Stores: memory (per process, nothing shared: the ceiling), local disk, SQLite (one file), and
PostgreSQL (one database, started here with pgserver). The figures are totals over the
workers. Run: ``.venv/bin/python bench/store_ops.py [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FILES = 100
BLOB = b"x" * 4096


def _store(kind: str, target: str) -> Any:
    if kind == "memory":
        from bastion.stores.memory import MemoryStore

        return MemoryStore()
    if kind == "local":
        from bastion.stores.local import LocalStore

        return LocalStore(target)
    if kind == "sqlite":
        from bastion.stores.sqlite import SqliteStore

        return SqliteStore(target)
    from bastion.stores.postgres import PostgresStore

    return PostgresStore(target, namespace="bench")


def _workspace(kind: str, target: str) -> Any:
    from bastion import Mount, Policy, Workspace
    from bastion.core.audit import NullAuditSink

    return Workspace(
        [Mount.of("/d", _store(kind, target))], policy=Policy.allow_all(), audit=NullAuditSink()
    )


async def _seed(ws: Any) -> None:
    await ws.mkdir("/d/many", parents=True, exist_ok=True)
    for i in range(FILES):
        await ws.write(f"/d/many/f{i:03d}.bin", BLOB)


def _worker(args: tuple[str, str, str, float, int, Any]) -> int:
    kind, target, op, seconds, wid, start = args
    return asyncio.run(_run(kind, target, op, seconds, wid, start))


async def _run(kind: str, target: str, op: str, seconds: float, wid: int, start: Any) -> int:
    if op == "search":
        ws = await _search_workspace(kind, target)
    else:
        ws = _workspace(kind, target)
        if kind == "memory":
            await _seed(ws)
        await ws.write(f"/d/own-{wid}.bin", BLOB)
    start.wait()
    done, i = 0, 0
    queries = ["cancer risk factors", "protein folding", "vaccine efficacy", "gene expression"]
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            if op == "read":
                await ws.read_bytes(f"/d/many/f{i % FILES:03d}.bin")
            elif op == "write":
                await ws.write(f"/d/own-{wid}.bin", BLOB)
            elif op == "list":
                await ws.list("/d/many")
            else:
                await ws.search(queries[i % len(queries)], mode="bm25", k=10)
            i += 1
            done += 1
    return done


async def _search_workspace(kind: str, target: str) -> Any:
    from _scifact import DEFAULT_DIR
    from bastion import MemoryStore, Mount, Policy, Workspace
    from bastion.core.audit import NullAuditSink
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.eval import load_dataset
    from bastion.knowledge.index.memory import MemoryIndex

    seed = kind == "memory" or target.endswith("#seed")
    if kind == "postgres":
        from bastion.knowledge.index.postgres import PostgresIndex

        index: Any = PostgresIndex(target.removesuffix("#seed"))
    else:
        index = MemoryIndex()
    knowledge = Knowledge(index, embedder=None)
    ws = Workspace(
        [Mount.of("/d", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        audit=NullAuditSink(),
    )
    if seed:
        data = load_dataset(DEFAULT_DIR, split="test")
        for n, doc in enumerate(data.iter_corpus()):
            if n >= 2000:
                break
            await ws.write(f"/d/{doc.doc_id}.md", f"# {doc.title}\n\n{doc.text}\n")
    return ws


def cell(kind: str, target: str, op: str, procs: int, seconds: float) -> float:
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(procs) as pool:
            pending = pool.map_async(
                _worker, [(kind, target, op, seconds, w, start) for w in range(procs)]
            )
            time.sleep(2.0 if op != "search" else 25.0)  # let workers set up
            start.set()
            counts = pending.get(timeout=600)
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--stores", default="memory,local,sqlite,postgres")
    parser.add_argument("--no-search", action="store_true")
    parser.add_argument("--no-files", action="store_true", help="only the search rows")
    args = parser.parse_args()
    kinds = args.stores.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="bastion-ops-"))
    server = None
    targets: dict[str, str] = {"memory": ""}
    try:
        (scratch / "local").mkdir()
        targets["local"] = str(scratch / "local")
        targets["sqlite"] = str(scratch / "ops.db")
        if "postgres" in kinds:
            import pgserver

            server = pgserver.get_server(scratch / "pg", cleanup_mode="stop")
            server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
            targets["postgres"] = server.get_uri()
        for kind in [] if args.no_files else kinds:
            if kind != "memory":
                asyncio.run(_seed(_workspace(kind, targets[kind])))
        from bastion.knowledge.eval import describe_machine

        print(f"machine: {describe_machine()}; {args.seconds:g} s per cell\n")
        print("| store | op | 1 process ops/s | 4 processes ops/s |")
        print("|---|---|---:|---:|")
        for kind in [] if args.no_files else kinds:
            for op in ("read", "write", "list"):
                one = cell(kind, targets[kind], op, 1, args.seconds)
                four = cell(kind, targets[kind], op, 4, args.seconds)
                print(f"| {kind} | {op} | {one:,.0f} | {four:,.0f} |", flush=True)
        if not args.no_search:
            rows = [("memory index", "memory", "")]
            if "postgres" in kinds:
                asyncio.run(_search_workspace("postgres", targets["postgres"] + "#seed"))
                rows.append(("postgres index", "postgres", targets["postgres"]))
            for name, kind, target in rows:
                one = cell(kind, target, "search", 1, args.seconds)
                four = cell(kind, target, "search", 4, args.seconds)
                print(f"| {name} | search | {one:,.0f} | {four:,.0f} |", flush=True)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
