"""Several real processes writing one embedded LanceDB index at once, against
:class:`LanceIndex` directly.

Each writer (a spawned process) runs its :func:`plan`: new documents written whole (as the
workspace does, ``replace_document``) or upserted, earlier ones written again at a new version
with other chunks, some deleted, and a few shared documents that every writer rewrites. Then a
fresh open is compared with what the plans make: every expected chunk exactly once, no chunk of
a deleted or superseded version, each document at one version whole. A writer killed
(``SIGKILL``) inside a write leaves its document whole at the old or the new version, and the
others go on. ``bench/lance_writers.py`` runs the same workload at 4 processes x 1,000 writes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

import lancedb
import numpy as np
import pytest

from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk

DIM = 8
EMBEDDER = "writers-test"
SHARED = 3
"""Documents every writer rewrites (``shared-0`` ...)."""
WRITES = 30
"""Writes per writer process (the benchmark runs 1,000)."""

Op = tuple[Literal["write", "upsert", "delete"], str, str, int]
"""(what, doc id, version, chunk count)."""


def open_index(folder: str | Path) -> LanceIndex:
    return LanceIndex(folder, dim=DIM, embedder=EMBEDDER)


def _vector(key: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    vec = np.random.default_rng(zlib.crc32(key.encode())).standard_normal(DIM)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def document(doc_id: str, version: str, chunks: int) -> list[IndexedChunk]:
    """A document's chunks at ``version``: the first keeps its id (and text) across versions,
    so a rewrite updates it in place; the others are new at each version."""
    meta = DocumentMeta(doc_id=doc_id, path=f"/w/{doc_id}.md", version=version)
    out = []
    for seq in range(chunks):
        cid = f"{doc_id}:0" if seq == 0 else f"{doc_id}:{version}:{seq}"
        text = f"{doc_id} opening" if seq == 0 else f"{doc_id} {version} part {seq}"
        out.append(
            IndexedChunk(
                chunk_id=cid,
                doc=meta,
                seq=seq,
                text=text,
                start_line=seq + 1,
                end_line=seq + 1,
                vector=_vector(cid),
            )
        )
    return out


def plan(writer: int, writes: int) -> list[Op]:
    """Writer ``writer``'s operations, one index write each, in order."""
    ops: list[Op] = []
    for i in range(writes):
        own = f"w{writer}-{i}"
        step = i % 10
        if step < 5:
            ops.append(("write", own, "v1", 1 + i % 4))
        elif step == 5:
            ops.append(("upsert", own, "v1", 2))
        elif step == 6:  # the document of step 0, again, with other chunks
            ops.append(("write", f"w{writer}-{i - 6}", "v2", 2 + i // 10 % 3))
        elif step == 7:  # the document of step 1 goes
            ops.append(("delete", f"w{writer}-{i - 6}", "", 0))
        elif step == 8:  # a document every writer rewrites
            ops.append(("write", f"shared-{i // 10 % SHARED}", f"{writer}.{i}", 1 + writer))
        else:  # the document of step 2 at a new version: fewer chunks than before
            ops.append(("write", f"w{writer}-{i - 7}", "v2", 1))
    return ops


def apply(index: LanceIndex, op: Op) -> None:
    what, doc_id, version, count = op
    if what == "write":
        index.replace_document(doc_id, document(doc_id, version, count))
    elif what == "upsert":
        index.upsert(document(doc_id, version, count))
    else:
        index.delete_documents([doc_id])


def outcome(ops: list[Op]) -> dict[str, tuple[str, int] | None]:
    """doc id -> (version, chunk count) after ``ops``, or None once deleted."""
    state: dict[str, tuple[str, int] | None] = {}
    for what, doc_id, version, count in ops:
        state[doc_id] = None if what == "delete" else (version, count)
    return state


def _spawn() -> Any:
    return multiprocessing.get_context("spawn")


def writer_main(
    folder: str, writer: int, writes: int, hold_at: int | None, conn: Connection | None
) -> None:
    """One writer process. At op ``hold_at`` its first LanceDB write is let through only when
    the parent says so (``conn``), then it reports ``committed`` and waits to be killed."""
    index = open_index(folder)
    ops = plan(writer, writes)
    for i, op in enumerate(ops):
        if i == hold_at and conn is not None:
            _hold_after_first_commit(conn)
        apply(index, op)
    index.close()


def _hold_after_first_commit(conn: Connection) -> None:
    """Wrap LanceDB's own write calls so that the next one, once committed, parks the process
    (still holding the index's write lock) until it is killed."""
    from lancedb.merge import LanceMergeInsertBuilder
    from lancedb.table import LanceTable

    def parked(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            conn.send("ready")
            conn.recv()  # the parent's go
            original(*args, **kwargs)
            conn.send("committed")
            conn.recv()  # never comes: the parent kills this process
            raise AssertionError("not killed")

        return call

    LanceTable.delete = parked(LanceTable.delete)  # type: ignore[method-assign]
    LanceMergeInsertBuilder.execute = parked(LanceMergeInsertBuilder.execute)  # type: ignore[method-assign]


@dataclass
class Check:
    """What a fresh open finds against what the plans allow."""

    rows: int = 0
    lost: list[str] = field(default_factory=list)
    """Expected chunks not in the table."""
    duplicated: list[str] = field(default_factory=list)
    """Chunk ids stored more than once."""
    stale: list[str] = field(default_factory=list)
    """Chunks of a deleted or superseded version, or of no planned version."""
    mirror: list[str] = field(default_factory=list)
    """Where a fresh LanceIndex's mirror disagrees with the table."""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.stale or self.mirror)


def check(
    folder: str | Path, exact: dict[str, tuple[str, int] | None], allowed: dict[str, set[Any]]
) -> Check:
    """Compare the table with ``exact`` (doc -> the one outcome it must have) and ``allowed``
    (doc -> the outcomes any of which it may have: a shared document, a killed write)."""
    rows = lancedb.connect(str(folder)).open_table("chunks").to_arrow().to_pylist()
    result = Check(rows=len(rows))
    seen: dict[str, int] = {}
    by_doc: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        seen[row["chunk_id"]] = seen.get(row["chunk_id"], 0) + 1
        by_doc.setdefault(row["doc_id"], set()).add((row["chunk_id"], row["version"]))
    result.duplicated = sorted(cid for cid, n in seen.items() if n > 1)

    def chunks_of(doc_id: str, state: tuple[str, int] | None) -> set[tuple[str, str]]:
        if state is None:
            return set()
        return {(c.chunk_id, state[0]) for c in document(doc_id, *state)}

    for doc_id in sorted(exact.keys() | allowed.keys() | by_doc.keys()):
        found = by_doc.get(doc_id, set())
        options = allowed.get(doc_id, {exact.get(doc_id)})
        wanted = [chunks_of(doc_id, state) for state in options]
        if found in wanted:
            continue
        nearest = min(wanted, key=lambda w: len(w ^ found))
        result.lost += sorted(f"{cid}@{v}" for cid, v in nearest - found)
        result.stale += sorted(f"{cid}@{v}" for cid, v in found - nearest)

    index = open_index(folder)
    try:
        mirrored = {
            doc_id: {(c.chunk_id, c.doc.version) for c in index.chunks_of(doc_id)}
            for doc_id in index.documents()
        }
        if mirrored != by_doc or index.count() != len(seen):
            result.mirror = sorted(mirrored.keys() ^ by_doc.keys()) or ["chunks differ"]
    finally:
        index.close()
    return result


def expectations(
    writers: int, writes: int, killed: tuple[int, int] | None = None
) -> tuple[dict[str, tuple[str, int] | None], dict[str, set[Any]]]:
    """What the plans make. ``killed`` = (writer, op): that writer stopped inside that op, so
    its own documents match the plan before or after it, and nothing later."""
    exact: dict[str, tuple[str, int] | None] = {}
    allowed: dict[str, set[Any]] = {}
    for n in range(writers):
        ops = plan(n, writes)
        prefixes = [ops]
        if killed is not None and killed[0] == n:
            prefixes = [ops[: killed[1]], ops[: killed[1] + 1]]
        for prefix in prefixes:
            for doc_id, state in outcome(prefix).items():
                if doc_id.startswith("shared-") or len(prefixes) > 1:
                    allowed.setdefault(doc_id, set()).add(state)
                else:
                    exact[doc_id] = state
        if len(prefixes) > 1:  # a document the killed op may have created may also be absent
            for doc_id in outcome(prefixes[1]).keys() - outcome(prefixes[0]).keys():
                allowed[doc_id].add(None)
    return exact, allowed


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "index"
    open_index(where).close()  # created once, before the writers race to open it
    yield where


def _run_writers(folder: Path, writers: int, writes: int) -> list[Any]:
    ctx = _spawn()
    procs = [
        ctx.Process(target=writer_main, args=(str(folder), n, writes, None, None))
        for n in range(writers)
    ]
    for p in procs:
        p.start()
    return procs


def _joined(procs: list[Any]) -> None:
    for p in procs:
        p.join(timeout=240)
        assert p.exitcode == 0, f"writer exited with {p.exitcode}"


def test_four_processes_writing_at_once_lose_and_duplicate_nothing(folder: Path) -> None:
    _joined(_run_writers(folder, 4, WRITES))
    exact, allowed = expectations(4, WRITES)
    result = check(folder, exact, allowed)
    assert result.ok, result
    assert result.rows > 0
    # Each write adds a fragment; the writer holding the lock at the 100th write compacted.
    fragments = lancedb.connect(str(folder)).open_table("chunks").stats()["fragment_stats"]
    assert fragments["num_fragments"] <= 4 * WRITES - 100 + 1


def test_a_writer_killed_inside_a_write_leaves_its_document_whole(folder: Path) -> None:
    ctx = _spawn()
    others = _run_writers(folder, 3, WRITES)
    parent, child = ctx.Pipe()
    victim_at = 16  # a rewrite at a new version (step 6): old chunks go, new ones come
    victim = ctx.Process(target=writer_main, args=(str(folder), 3, WRITES, victim_at, child))
    victim.start()
    assert parent.recv() == "ready"
    parent.send("go")
    assert parent.recv() == "committed"  # its first LanceDB commit of that write is done
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(timeout=60)
    assert victim.exitcode == -signal.SIGKILL
    _joined(others)  # the kernel released the dead writer's lock: the others finished

    exact, allowed = expectations(4, WRITES, killed=(3, victim_at))
    result = check(folder, exact, allowed)
    assert result.ok, result

    # The next writer (this process) is not blocked either, and what it writes is there once.
    late = open_index(folder)
    for op in plan(9, 5):
        apply(late, op)
    late.close()
    for doc_id, state in outcome(plan(9, 5)).items():  # it wrote last
        allowed.pop(doc_id, None)
        exact[doc_id] = state
    assert check(folder, exact, allowed).ok


def test_a_writer_killed_after_its_commit_is_still_seen_by_the_next_writer(
    folder: Path,
) -> None:
    """The dead writer committed but never said so (its counter bump died with it): a
    process whose mirror was in step before that commit must not take its own next write for
    the only change."""
    here = open_index(folder)
    ctx = _spawn()
    parent, child = ctx.Pipe()
    victim = ctx.Process(target=writer_main, args=(str(folder), 0, 5, 0, child))
    victim.start()
    assert parent.recv() == "ready"  # holding the write lock, before its commit
    here.refresh()  # in step with everything said so far
    parent.send("go")
    assert parent.recv() == "committed"
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(timeout=60)
    here.upsert(document("mine", "v1", 2))
    here.refresh()
    assert set(here.documents()) == {"w0-0", "mine"}
    here.close()
