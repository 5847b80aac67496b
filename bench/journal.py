"""The change journal's cost: a write with and without it, for every store and journal in one
run; storage per change; and ``revert`` of 1,000 changes.

    PYTHONPATH=src python bench/journal.py [--writes 500] [--size 1024] [--rounds 7]
        [--stores local,memory] [--journals sqlite,postgresql] [--dsn postgresql://...]
        [--folder /dev/shm]

A write is ``Workspace.write`` of ``--size`` bytes over an existing file (so the journal reads,
or knows, the content it replaces), on a local folder (each write durable) or in memory. For
each store, the workspace without a journal and one per journal take turns, round after
round, each round begun by the next one (what one leaves the disk to do falls on all in
turn), so a slow moment of a shared machine falls on all of them; each ratio is the median of
the per-round ratios (journal / without, same round), of the wall clock and of the process's
CPU time (every thread: the work the journal adds, whatever it overlaps). ``postgresql``
keeps the journal in PostgreSQL (:class:`PgJournal`): the database ``--dsn``, or a server of
its own started with ``pgserver`` (on this machine, a Unix socket). ``--writes`` is per round
and workspace on a local folder, ten times that in memory. ``--folder`` puts the folders and
the SQLite journal there: on a ``tmpfs`` (``/dev/shm``) a flush costs nothing, which leaves
the journal's own work to be seen beside a write's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
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


async def _writes(ws: Workspace, n: int, size: int, files: int) -> tuple[float, float]:
    """Seconds per write, wall clock and CPU (every thread of the process), ``n`` writes
    round-robin over ``files`` files."""
    payloads = [bytes([65 + i % 26]) * size for i in range(7)]
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        await ws.write(f"/w/f{i % files}.txt", payloads[i % 7])
    return (time.perf_counter() - start) / n, (time.process_time() - cpu) / n


@contextlib.contextmanager
def _journal(kind: str, dsn: str | None, base: Path) -> Iterator[Journal]:
    if kind == "sqlite":
        journal = Journal(base / "journal.db")
        yield journal
        journal.close()
        return
    if dsn is not None:
        journal = PgJournal(dsn)
        yield journal
        journal.close()
        return
    import pgserver  # the server binaries, from PyPI

    folder = Path(tempfile.mkdtemp(prefix="bench-journal-pg-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        journal = PgJournal(server.get_uri())
        yield journal
        journal.close()
    finally:
        server.cleanup()


async def _revert(ws: Workspace) -> str:
    revert_ws = ws.with_thread("revert")
    for i in range(1000):
        await revert_ws.write(f"/w/r{i % 100}.txt", f"change {i}\n" * 8)
    start = time.perf_counter()
    done = await revert_ws.revert("revert")
    took = time.perf_counter() - start
    return (
        f"revert of {len(done.changes)} changes ({len(done.removed)} files): {took * 1000:.0f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--stores", default="local,memory")
    parser.add_argument("--journals", default="sqlite,postgresql")
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--folder", default=None, help="where the stores and journal live")
    args = parser.parse_args()
    stores, journals = args.stores.split(","), args.journals.split(",")
    with contextlib.ExitStack() as stack:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=args.folder)))
        opened = {j: stack.enter_context(_journal(j, args.dsn, base / j)) for j in journals}
        kinds = [(s, j) for s in stores for j in [None, *journals]]
        spaces = {
            (s, j): _workspace(_store(s, base / f"{s}-{j}"), None if j is None else opened[j])
            for s, j in kinds
        }
        for ws in spaces.values():  # the files exist: every timed write replaces one
            await _writes(ws, args.files, args.size, args.files)
        times: dict[tuple[str, str | None], list[float]] = {k: [] for k in kinds}
        cpus: dict[tuple[str, str | None], list[float]] = {k: [] for k in kinds}
        for r in range(args.rounds):
            for s, j in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:  # each goes first
                n = args.writes * (10 if s == "memory" else 1)
                wall, cpu = await _writes(spaces[(s, j)], n, args.size, args.files)
                times[(s, j)].append(wall)
                cpus[(s, j)].append(cpu)
        load = os.getloadavg()[0]
        print(
            f"size={args.size} B, writes per round {args.writes} (local) / {args.writes * 10}"
            f" (memory), rounds={args.rounds}, load average {load:.1f}"
        )
        print("| store | journal | write, median | ratio | CPU per write | CPU ratio |")
        print("|---|---|---|---|---|---|")
        for s, j in kinds:
            cells = []
            for table in (times, cpus):
                own = table[(s, j)]
                ratios = [a / b for a, b in zip(own, table[(s, None)], strict=True)]
                ratio = "" if j is None else f"{statistics.median(ratios):.2f}x"
                cells += [f"{statistics.median(own) * 1e6:.0f} us", ratio]
            print(f"| {s} | {j or '(none)'} | " + " | ".join(cells) + " |")
        for j, journal in opened.items():
            changes, entries, content = journal.size()
            line = f"{j}: {changes} changes, {entries} entries, {content} content bytes"
            if j == "sqlite":
                journal.compact()
                db_bytes = sum(p.stat().st_size for p in (base / j).glob("journal.db*"))
                per = (db_bytes - content) / max(changes, 1)
                line += f", {db_bytes} bytes on disk: {per:.0f} per change beyond the contents"
            print(line)
            print(f"{j}: " + await _revert(spaces[(stores[0], j)]))


if __name__ == "__main__":
    asyncio.run(main())
