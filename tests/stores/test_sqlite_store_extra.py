"""SqliteStore beyond the shared contract: persistence, chunks, several processes on one file,
labels, and what a damaged, foreign or locked file does."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_child import COUNTER_PATH

from bastion.core.errors import (
    ConfigurationError,
    ConflictError,
    NotFoundError,
    StoreError,
    StoreUnavailableError,
)
from bastion.core.models import Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.stores._sqlite_db import APPLICATION_ID, SCHEMA_VERSION
from bastion.stores.sqlite import DEFAULT_CHUNK_SIZE, SqliteStore
from bastion.workspace import Workspace

P = VPath.parse
KiB, MiB = 1 << 10, 1 << 20
CHILD = Path(__file__).with_name("store_child.py")
CONFIDENTIAL = Labels(classification="confidential", roles=frozenset({"hr"}), tags=frozenset({"x"}))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ws.db"


@pytest.fixture
def store(db: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(db)
    yield opened
    opened.close()


def _query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows from the database file through a connection of the test's own."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _inode(db: Path, name: str) -> int:
    [(inode,)] = _query(db, "SELECT inode FROM dentries WHERE name = ?", (name,))
    return int(inode)


def _blob(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


# -- the file ----------------------------------------------------------------------------------


def test_wal_mode_schema_version_and_application_id_are_recorded(
    store: SqliteStore, db: Path
) -> None:
    assert store.kind == "sqlite"
    assert store.keeps_labels
    assert str(db) not in store.describe()
    assert _query(db, "PRAGMA journal_mode") == [("wal",)]
    assert _query(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert _query(db, "PRAGMA application_id") == [(APPLICATION_ID,)]
    tables = {row[0] for row in _query(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"inodes", "dentries", "chunks", "meta"} <= tables


async def test_everything_persists_across_reopening(db: Path) -> None:
    first = SqliteStore(db)
    await first.makedirs(P("/a/b"))
    big = _blob(3 * MiB + 5, seed=1)
    written = {
        "/a/b/big.bin": await first.write(P("/a/b/big.bin"), big),
        "/a/note.md": await first.write(P("/a/note.md"), b"# note", labels=CONFIDENTIAL),
        "/top.txt": await first.write(P("/top.txt"), b"top"),
    }
    await first.write(P("/top.txt"), b"!", mode=WriteMode.APPEND)
    written["/top.txt"] = await first.stat(P("/top.txt"))
    first.close()

    again = SqliteStore(db, create=False)
    try:
        assert await again.read_all(P("/a/b/big.bin")) == big
        assert await again.read_range(P("/a/b/big.bin"), MiB - 2, 4) == big[MiB - 2 : MiB + 2]
        assert await again.read_all(P("/top.txt")) == b"top!"
        for raw, info in written.items():
            now = await again.stat(P(raw))
            assert (now.size, now.mtime, now.version) == (info.size, info.mtime, info.version)
        assert (await again.stat(P("/a/note.md"))).labels == CONFIDENTIAL
        assert {str(i.path) async for i in again.walk()} == {
            "/a",
            "/a/b",
            "/a/b/big.bin",
            "/a/note.md",
            "/top.txt",
        }
        newer = await again.write(P("/top.txt"), b"again")  # versions go on, never repeat
        assert newer.version not in {info.version for info in written.values()}
    finally:
        again.close()


async def test_versions_never_repeat_across_reopening_and_recreating(db: Path) -> None:
    seen: list[str | None] = []
    for _ in range(3):
        store = SqliteStore(db)
        seen.append((await store.write(P("/v.txt"), b"same")).version)
        await store.delete(P("/v.txt"))
        store.close()
    assert len(set(seen)) == 3


# -- chunks ------------------------------------------------------------------------------------


async def test_content_is_stored_in_chunks_of_the_files_own_size(db: Path) -> None:
    small = SqliteStore(db, chunk_size=4 * KiB)
    data = _blob(10 * KiB + 1, seed=2)
    await small.write(P("/f.bin"), data)
    small.close()
    inode = _inode(db, "f.bin")
    assert len(data) < DEFAULT_CHUNK_SIZE  # rewritten below as one chunk of the default
    sizes = _query(
        db, "SELECT idx, length(data) FROM chunks WHERE inode = ? ORDER BY idx", (inode,)
    )
    assert sizes == [(0, 4 * KiB), (1, 4 * KiB), (2, 2 * KiB + 1)]

    default = SqliteStore(db)  # 64 KiB for new content; the file keeps its own until rewritten
    try:
        more = _blob(5 * KiB, seed=3)
        await default.write(P("/f.bin"), more, mode=WriteMode.APPEND)
        assert await default.read_all(P("/f.bin")) == data + more
        assert (
            await default.read_range(P("/f.bin"), 8 * KiB - 1, 5000)
            == (data + more)[8 * KiB - 1 : 8 * KiB - 1 + 5000]
        )
        assert len(_query(db, "SELECT 1 FROM chunks WHERE inode = ?", (inode,))) == 4
        await default.write(P("/f.bin"), data)
        assert _query(db, "SELECT idx, length(data) FROM chunks WHERE inode = ?", (inode,)) == [
            (0, len(data))
        ]
    finally:
        default.close()


async def test_a_range_read_selects_only_the_chunks_that_cover_it(db: Path) -> None:
    store = SqliteStore(db, chunk_size=4 * KiB)
    try:
        data = _blob(40 * KiB, seed=4)
        await store.write(P("/f.bin"), data)
        inode = _inode(db, "f.bin")
        conn = sqlite3.connect(db)
        conn.execute("DELETE FROM chunks WHERE inode = ? AND idx = 5", (inode,))  # 20-24 KiB
        conn.commit()
        conn.close()
        path = P("/f.bin")
        assert await store.read_range(path, 0, 20 * KiB) == data[: 20 * KiB]
        assert await store.read_range(path, 24 * KiB, 16 * KiB) == data[24 * KiB :]
        assert (await store.read_file(path, 19 * KiB, KiB))[1] == data[19 * KiB : 20 * KiB]
        for offset, length in ((20 * KiB, 1), (19 * KiB, 2 * KiB), (0, None)):
            with pytest.raises(StoreError, match=r"^/f\.bin: .*damaged") as caught:
                await store.read_range(path, offset, length)
            assert "\n" not in str(caught.value)
    finally:
        store.close()


async def test_append_rewrites_only_the_last_chunk(db: Path) -> None:
    store = SqliteStore(db, chunk_size=4 * KiB)
    try:
        await store.write(P("/log"), _blob(10 * KiB + 100, seed=5))
        inode = _inode(db, "log")
        sql = "SELECT idx, rowid, data FROM chunks WHERE inode = ? ORDER BY idx"
        before = _query(db, sql, (inode,))
        await store.write(P("/log"), _blob(7 * KiB, seed=6), mode=WriteMode.APPEND)
        after = _query(db, sql, (inode,))
        assert after[:2] == before[:2]  # the full chunks are untouched, row and bytes
        assert after[2][:2] == before[2][:2] and after[2][2].startswith(before[2][2])
        assert [len(row[2]) for row in after] == [4 * KiB] * 4 + [1 * KiB + 100]
    finally:
        store.close()


async def test_deleting_a_tree_leaves_no_rows_behind(store: SqliteStore, db: Path) -> None:
    await store.makedirs(P("/d/e/f"))
    await store.write(P("/d/e/f/x.bin"), _blob(200 * KiB, seed=7))
    await store.write(P("/d/y.bin"), _blob(70 * KiB, seed=8))
    await store.write(P("/keep"), b"k")
    await store.delete(P("/d"), recursive=True)
    assert _query(db, "SELECT count(*) FROM inodes") == [(2,)]  # the root and /keep
    assert _query(db, "SELECT name FROM dentries") == [("keep",)]
    assert _query(db, "SELECT count(*) FROM chunks") == [(1,)]


# -- several writers, several processes --------------------------------------------------------


async def test_two_processes_and_this_one_lose_no_update(store: SqliteStore, db: Path) -> None:
    await store.write(COUNTER_PATH, b"0")
    each = 40
    children = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "increment", "sqlite", str(db), str(each)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        await _add(store, each)
        outputs = [child.communicate(timeout=300) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.startswith("done ")
    assert int(await store.read_all(COUNTER_PATH)) == 3 * each


def test_two_store_objects_on_one_file_lose_no_update(db: Path) -> None:
    asyncio.run(_seed_counter(db))
    threads, each = 3, 20

    def worker() -> None:
        store = SqliteStore(db)
        try:
            asyncio.run(_add(store, each))
        finally:
            store.close()

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=300)
    store = SqliteStore(db)
    try:
        assert int(asyncio.run(store.read_all(COUNTER_PATH))) == threads * each
    finally:
        store.close()


async def _seed_counter(db: Path) -> None:
    store = SqliteStore(db)
    await store.write(COUNTER_PATH, b"0")
    store.close()


async def _add(store: SqliteStore, times: int) -> None:
    """Add one to the counter ``times`` times under ``if_version``, retrying conflicts."""
    done = 0
    while done < times:
        version = (await store.stat(COUNTER_PATH)).version
        value = int(await store.read_all(COUNTER_PATH))
        try:
            await store.write(COUNTER_PATH, b"%d" % (value + 1), if_version=version)
        except ConflictError:
            continue
        done += 1


async def test_read_file_reads_the_snapshot_its_check_saw(store: SqliteStore, db: Path) -> None:
    old = await store.write(P("/f"), b"old " * 50_000)
    other = SqliteStore(db)
    try:

        def check(_info: object) -> None:
            # Another connection commits a new content between the check and the bytes.
            writer = threading.Thread(
                target=lambda: asyncio.run(other.write(P("/f"), b"new! " * 50_000))
            )
            writer.start()
            writer.join(timeout=60)

        info, data = await store.read_file(P("/f"), check=check)
        assert info.version == old.version
        assert data == b"old " * 50_000
        assert await store.read_all(P("/f")) == b"new! " * 50_000
    finally:
        other.close()


# -- labels ------------------------------------------------------------------------------------


async def test_labels_belong_to_the_entry(store: SqliteStore) -> None:
    path = P("/doc.md")
    written = await store.write(path, b"v1", labels=CONFIDENTIAL)
    assert written.labels == CONFIDENTIAL
    assert (await store.stat(path)).labels == CONFIDENTIAL
    await store.write(path, b"v2")  # overwrite and append keep the labels
    await store.write(path, b"+", mode=WriteMode.APPEND)
    info, data = await store.read_file(path)
    assert (info.labels, data) == (CONFIDENTIAL, b"v2+")
    [listed] = await store.list(VPath.ROOT)
    assert listed.labels == CONFIDENTIAL
    relabelled = await store.set_labels(path, None)
    assert relabelled.labels is None and relabelled.version == info.version
    await store.set_labels(path, Labels(tenant="acme"))
    await store.delete(path)
    assert (await store.write(path, b"new")).labels is None
    await store.mkdir(P("/dir"))
    assert (await store.set_labels(P("/dir"), CONFIDENTIAL)).labels == CONFIDENTIAL
    with pytest.raises(NotFoundError):
        await store.set_labels(P("/missing"), CONFIDENTIAL)


async def test_the_guard_enforces_the_stored_labels(store: SqliteStore) -> None:
    await store.write(P("/public.md"), b"for everyone")
    await store.write(P("/salaries.md"), b"for hr only", labels=CONFIDENTIAL)
    ws = Workspace([Mount.of("/kb", store)], policy=Policy.allow_all())
    agent = ws.with_principal(Principal.of("agent"))
    assert await agent.read_text("/kb/public.md") == "for everyone"
    assert [str(i.path) for i in await agent.list("/kb")] == ["/kb/public.md"]
    with pytest.raises(NotFoundError):
        await agent.read_text("/kb/salaries.md")
    hr = ws.with_principal(Principal.of("hr", roles={"hr"}, clearance="confidential"))
    assert await hr.read_text("/kb/salaries.md") == "for hr only"


# -- damaged, foreign, locked and closed files -------------------------------------------------


def test_files_that_are_not_a_store_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all, " * 200)
    with pytest.raises(ConfigurationError, match="damaged or not a database"):
        SqliteStore(garbage)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigurationError, match="another application"):
        SqliteStore(foreign)
    newer = tmp_path / "newer.db"
    SqliteStore(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ConfigurationError, match="newer than this Bastion"):
        SqliteStore(newer)
    with pytest.raises(ConfigurationError, match="create=True"):
        SqliteStore(tmp_path / "missing.db", create=False)
    with pytest.raises(ConfigurationError, match="cannot open"):
        SqliteStore(tmp_path / "no" / "such" / "folder" / "ws.db")
    assert not (tmp_path / "missing.db").exists()


def test_bad_options_are_configuration_errors(db: Path) -> None:
    for size in (0, 100, 64 * MiB):
        with pytest.raises(ConfigurationError, match="chunk_size"):
            SqliteStore(db, chunk_size=size)
    with pytest.raises(ConfigurationError, match="busy_timeout"):
        SqliteStore(db, busy_timeout=-1)


async def test_damaged_pages_are_store_errors(db: Path) -> None:
    store = SqliteStore(db)
    await store.write(P("/big.bin"), _blob(2 * MiB, seed=9))
    await store.write(P("/small.txt"), b"small")
    store.close()
    [(root,)] = _query(db, "SELECT rootpage FROM sqlite_master WHERE name = 'chunks'")
    [(page,)] = _query(db, "PRAGMA page_size")
    with db.open("r+b") as raw:  # the root page of the chunks table becomes garbage
        raw.seek((root - 1) * page)
        raw.write(b"\xff" * page)
    store = SqliteStore(db)
    try:
        assert (await store.stat(P("/small.txt"))).size == 5  # the tree is still readable
        for call in (
            store.read_all(P("/big.bin")),
            store.read_range(P("/small.txt"), 0, 2),
            store.write(P("/small.txt"), b"new"),
        ):
            with pytest.raises(StoreError, match="damaged") as caught:
                await call
            message = str(caught.value)
            assert message.startswith(("/big.bin:", "/small.txt:")) and "\n" not in message
            assert str(db) not in message
    finally:
        store.close()


async def test_a_writer_elsewhere_delays_writes_but_not_reads(db: Path) -> None:
    store = SqliteStore(db, busy_timeout=0.05)
    await store.write(P("/f.txt"), b"before")
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(StoreUnavailableError) as caught:
            await store.write(P("/f.txt"), b"blocked")
        message = str(caught.value)
        assert message.startswith("/f.txt: ") and "locked" in message and "\n" not in message
        assert await store.read_all(P("/f.txt")) == b"before"  # WAL: readers go on
        other.execute("ROLLBACK")
        await store.write(P("/f.txt"), b"after")
        assert await store.read_all(P("/f.txt")) == b"after"
    finally:
        other.close()
        store.close()


async def test_an_exclusive_lock_elsewhere_is_store_unavailable(db: Path) -> None:
    store = SqliteStore(db, busy_timeout=0.05)
    await store.write(P("/f.txt"), b"content")
    store.close()
    other = sqlite3.connect(db, isolation_level=None)
    try:  # another program holds the whole file (not in WAL's shared mode)
        other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailableError, match="locked by another process; retry"):
            SqliteStore(db, busy_timeout=0.05)
    finally:
        other.close()
    store = SqliteStore(db, busy_timeout=0.05)
    try:
        assert await store.read_all(P("/f.txt")) == b"content"
    finally:
        store.close()


async def test_a_closed_store_says_so(db: Path) -> None:
    store = SqliteStore(db)
    await store.write(P("/f"), b"x")
    store.close()
    with pytest.raises(StoreError, match=r"^/f: the SQLite store is closed$"):
        await store.read_all(P("/f"))
    with pytest.raises(StoreError, match="closed"):
        await store.write(P("/f"), b"y")
