"""The change journal's cost: a write with and without it, in one run; storage per change; and
``revert`` of 1,000 changes.

    PYTHONPATH=src python bench/journal.py [--writes 2000] [--size 1024] [--store local]
        [--journal sqlite|postgresql] [--dsn postgresql://...]

A write is ``Workspace.write`` of ``--size`` bytes over an existing file (so the journal reads
the content it replaces), on a local folder (``--store local``, the default; each write
durable) or in memory. The two workspaces alternate in rounds, so a slow moment falls on both.
``--journal postgresql`` keeps the journal in PostgreSQL (:class:`PgJournal`): the database
``--dsn``, or a server of its own started with ``pgserver`` (on this machine, a Unix socket).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.ports import Store
from bastion.workspace.journal import Journal, PgJournal


def _store(kind: str, root: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    root.mkdir(parents=True)
    return LocalStore(root)


def _workspace(store: Store, journal: Journal | None) -> Workspace:
    return Workspace(
        [Mount.of("/w", store)],
        policy=Policy.allow_all(),
        principal=Principal.of("bench"),
        journal=journal,
        document_labels=True,
    ).with_thread("bench")


async def _writes(ws: Workspace, n: int, size: int, files: int) -> float:
    """Seconds per write, ``n`` writes round-robin over ``files`` files."""
    payloads = [bytes([65 + i % 26]) * size for i in range(7)]
    start = time.perf_counter()
    for i in range(n):
        await ws.write(f"/w/f{i % files}.txt", payloads[i % 7])
    return (time.perf_counter() - start) / n


@contextlib.contextmanager
def _journal(kind: str, dsn: str | None, base: Path) -> Iterator[Journal]:
    if kind == "sqlite":
        yield Journal(base / "journal.db")
        return
    if dsn is not None:
        yield PgJournal(dsn)
        return
    import pgserver  # the server binaries, from PyPI

    folder = Path(tempfile.mkdtemp(prefix="bench-journal-pg-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        yield PgJournal(server.get_uri())
    finally:
        server.cleanup()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", choices=("local", "memory"), default="local")
    parser.add_argument("--journal", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        _journal(args.journal, args.dsn, Path(tmp)) as journal,
    ):
        base = Path(tmp)
        plain = _workspace(_store(args.store, base / "plain"), None)
        kept = _workspace(_store(args.store, base / "kept"), journal)
        per_round = max(args.writes // args.rounds, args.files)
        for ws in (plain, kept):  # the files exist: every timed write replaces one
            await _writes(ws, args.files, args.size, args.files)
        without, with_ = [], []
        for _ in range(args.rounds):
            without.append(await _writes(plain, per_round, args.size, args.files))
            with_.append(await _writes(kept, per_round, args.size, args.files))
        a, b = statistics.median(without), statistics.median(with_)
        print(
            f"journal={args.journal} store={args.store} size={args.size} "
            f"writes/round={per_round} rounds={args.rounds}"
        )
        print(f"write without journal  {a * 1e6:9.1f} us")
        print(f"write with journal     {b * 1e6:9.1f} us   ratio {b / a:.2f}x")
        changes, entries, content = journal.size()
        journal.compact()
        if args.journal == "sqlite":
            db_bytes = sum(p.stat().st_size for p in base.glob("journal.db*"))
            print(
                f"journal: {changes} changes, {entries} entries, {content} content bytes, "
                f"{db_bytes} bytes on disk: {(db_bytes - content) / max(changes, 1):.0f} bytes "
                "per change beyond the contents (each content stored once)"
            )
        else:
            print(f"journal: {changes} changes, {entries} entries, {content} content bytes")
        # revert of 1,000 changes in one thread
        revert_ws = kept.with_thread("revert")
        for i in range(1000):
            await revert_ws.write(f"/w/r{i % 100}.txt", f"change {i}\n" * 8)
        start = time.perf_counter()
        done = await revert_ws.revert("revert")
        took = time.perf_counter() - start
        print(
            f"revert of {len(done.changes)} changes ({len(done.removed)} files removed): "
            f"{took * 1000:.0f} ms"
        )
        journal.close()


if __name__ == "__main__":
    asyncio.run(main())
