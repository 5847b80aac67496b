"""The store contract: what every :class:`~bastion.core.ports.Store` must do, checked once.

A store's test module subclasses :class:`StoreContract` and provides the ``store`` fixture
(a fresh, empty store per test)::

    class TestMemoryStore(StoreContract):
        @pytest.fixture
        def store(self) -> MemoryStore:
            return MemoryStore()

The suite covers the seven primitives (stat, read_range, write, delete, list, mkdir, rename),
the methods derived on the base class (exists, read_all, makedirs, walk, copy_file), awkward
content and names, and concurrent conditional writers from tasks and from threads.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    LabelError,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["StoreContract"]

P = VPath.parse
MiB = 1 << 20
ALL_BYTES = bytes(range(256))

WALK_TREE: dict[str, bytes | None] = {
    "/a": None,
    "/a/x.txt": b"x",
    "/a/b": None,
    "/a/b/y.txt": b"yy",
    "/a/b/c": None,
    "/a/b/c/z.txt": b"zzz",
    "/e": None,
    "/top.txt": b"top",
}
"""A tree for the walk tests: path -> content, ``None`` for a directory."""


def _blob(size: int, seed: int = 0) -> bytes:
    """Deterministic pseudo-random bytes (every byte value, no repeating period to hide in)."""
    return random.Random(seed).randbytes(size)


async def _build(store: Store, tree: dict[str, bytes | None]) -> None:
    """Create ``tree`` (path -> content; ``None`` for a directory), parents first."""
    for raw in sorted(tree, key=lambda p: P(p).depth):
        content = tree[raw]
        if content is None:
            await store.mkdir(P(raw))
        else:
            await store.write(P(raw), content, mode=WriteMode.CREATE)


async def _listing(store: Store, raw: str) -> dict[str, tuple[EntryKind, int]]:
    return {str(i.path): (i.kind, i.size) for i in await store.list(P(raw))}


async def _walk(store: Store, raw: str = "/", max_depth: int | None = None) -> list[FileInfo]:
    return [info async for info in store.walk(P(raw), max_depth=max_depth)]


async def _increment(store: Store, path: VPath, times: int, *, threaded: bool) -> int:
    """Add one to the counter in ``path`` ``times`` times, read-modify-write under
    ``if_version``, retrying on :class:`ConflictError`. Returns the number of conflicts.

    Between the read and the write it lets the other writers run, so that they collide: other
    tasks on this loop (``asyncio.sleep(0)``), or other threads (``time.sleep``, which releases
    the GIL; a store that never suspends would otherwise run each writer's loop uninterrupted).
    """
    conflicts = 0
    done = 0
    while done < times:
        version = (await store.stat(path)).version
        value = int(await store.read_all(path))
        if threaded:
            time.sleep(0.0001)  # blocking on purpose: hand over to the other threads
        else:
            await asyncio.sleep(0)
        try:
            await store.write(path, b"%d" % (value + 1), if_version=version)
        except ConflictError:
            conflicts += 1
            continue
        done += 1
    return conflicts


class StoreContract:
    """Behaviour shared by every store. Subclasses override the ``store`` fixture."""

    reads_labels = False
    """True for a store that reads document labels out of what it holds (front matter, a
    ``<name>.labels.yaml`` sidecar): ``DocumentLabels`` and the workspace's stack above it.
    Such a store refuses content whose labels it could not read back, since the file would be
    hidden from everybody; to any other store content is bytes. What else follows from reading
    labels is checked in ``tests/contract/test_wrapped_stores.py``."""

    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError("a StoreContract subclass must provide the `store` fixture")

    def test_kind_and_description(self, store: Store) -> None:
        assert store.kind
        assert store.kind != Store.kind  # each backend names itself
        assert store.describe()

    # -- stat --------------------------------------------------------------------------------

    async def test_stat_file(self, store: Store) -> None:
        before = time.time()
        written = await store.write(P("/a.txt"), b"hello")
        info = await store.stat(P("/a.txt"))
        assert info.path == P("/a.txt")
        assert info.kind is EntryKind.FILE
        assert info.is_file
        assert not info.is_dir
        assert info.size == 5
        assert info.version
        assert info.version == written.version
        assert abs(info.mtime - before) < 24 * 3600  # a POSIX timestamp, not a counter

    async def test_stat_directory(self, store: Store) -> None:
        await store.mkdir(P("/docs"))
        info = await store.stat(P("/docs"))
        assert info.path == P("/docs")
        assert info.kind is EntryKind.DIRECTORY
        assert info.is_dir
        assert not info.is_file

    async def test_stat_root_is_a_directory(self, store: Store) -> None:
        info = await store.stat(VPath.ROOT)
        assert info.is_dir
        assert info.path == VPath.ROOT

    async def test_stat_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.stat(P("/nope.txt"))
        with pytest.raises(NotFoundError):
            await store.stat(P("/no/such/dir/file.txt"))

    async def test_stat_through_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        with pytest.raises(NotADirectoryError_):
            await store.stat(P("/a.txt/b"))

    # -- read_range --------------------------------------------------------------------------

    async def test_read_range_offsets_and_lengths(self, store: Store) -> None:
        await store.write(P("/f"), b"0123456789")
        f = P("/f")
        assert await store.read_range(f) == b"0123456789"
        assert await store.read_range(f, 0, None) == b"0123456789"
        assert await store.read_range(f, 3) == b"3456789"
        assert await store.read_range(f, 0, 4) == b"0123"
        assert await store.read_range(f, 2, 3) == b"234"
        assert await store.read_range(f, 9, 1) == b"9"
        assert await store.read_range(f, 7, 100) == b"789"  # fewer at the end of file

    async def test_read_range_past_end_and_zero_length(self, store: Store) -> None:
        await store.write(P("/f"), b"0123456789")
        f = P("/f")
        assert await store.read_range(f, 10) == b""
        assert await store.read_range(f, 10, 5) == b""
        assert await store.read_range(f, 1000, 5) == b""
        assert await store.read_range(f, 1000) == b""
        assert await store.read_range(f, 0, 0) == b""
        assert await store.read_range(f, 5, 0) == b""
        assert await store.read_range(f, 1000, 0) == b""

    async def test_read_range_negative_is_refused(self, store: Store) -> None:
        await store.write(P("/f"), b"0123456789")
        with pytest.raises(ValueError, match="non-negative"):
            await store.read_range(P("/f"), -1)
        with pytest.raises(ValueError, match="non-negative"):
            await store.read_range(P("/f"), 0, -1)
        with pytest.raises(ValueError, match="non-negative"):
            await store.read_range(P("/f"), -5, -5)

    async def test_read_empty_file(self, store: Store) -> None:
        info = await store.write(P("/empty"), b"")
        assert info.size == 0
        assert (await store.stat(P("/empty"))).size == 0
        assert await store.read_all(P("/empty")) == b""
        assert await store.read_range(P("/empty"), 0, 10) == b""
        assert await store.read_range(P("/empty"), 3, 10) == b""

    async def test_read_directory(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        with pytest.raises(IsADirectoryError_):
            await store.read_range(P("/d"))
        with pytest.raises(IsADirectoryError_):
            await store.read_range(P("/d"), 0, 10)
        with pytest.raises(IsADirectoryError_):
            await store.read_all(VPath.ROOT)

    async def test_read_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.read_range(P("/nope"))
        with pytest.raises(NotFoundError):
            await store.read_all(P("/no/such/file"))

    # -- read_file (one lookup: info, check, bytes) -------------------------------------------

    async def test_read_file_returns_info_and_bytes(self, store: Store) -> None:
        written = await store.write(P("/f"), b"0123456789")
        info, data = await store.read_file(P("/f"))
        assert data == b"0123456789"
        assert info.is_file and info.size == 10 and info.version == written.version
        assert info.path == P("/f")
        assert (await store.read_file(P("/f"), 2, 3))[1] == b"234"
        assert (await store.read_file(P("/f"), 7, 100))[1] == b"789"
        assert (await store.read_file(P("/f"), 3))[1] == b"3456789"
        assert (await store.read_file(P("/f"), 1000))[1] == b""
        assert (await store.read_file(P("/f"), 5, 0))[1] == b""

    async def test_read_file_check_sees_the_info_before_any_byte(self, store: Store) -> None:
        await store.write(P("/f"), b"secret bytes")
        seen: list[FileInfo] = []

        class Refused(Exception):
            pass

        def refuse(info: FileInfo) -> None:
            seen.append(info)
            raise Refused

        with pytest.raises(Refused):
            await store.read_file(P("/f"), check=refuse)
        assert [(i.path, i.size) for i in seen] == [(P("/f"), 12)]
        info, data = await store.read_file(P("/f"), check=seen.append)
        assert data == b"secret bytes" and seen[-1] == info

    async def test_read_file_refuses_directories_missing_and_negatives(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/f"), b"x")
        checked: list[FileInfo] = []
        with pytest.raises(IsADirectoryError_):
            await store.read_file(P("/d"), check=checked.append)
        with pytest.raises(IsADirectoryError_):
            await store.read_file(VPath.ROOT)
        with pytest.raises(NotFoundError):
            await store.read_file(P("/nope"), check=checked.append)
        with pytest.raises(NotFoundError):
            await store.read_file(P("/no/such/file"))
        with pytest.raises(NotADirectoryError_):
            await store.read_file(P("/f/x"))
        with pytest.raises(ValueError, match="non-negative"):
            await store.read_file(P("/f"), -1)
        with pytest.raises(ValueError, match="non-negative"):
            await store.read_file(P("/f"), 0, -1)
        assert checked == []

    async def test_read_file_matches_read_range(self, store: Store) -> None:
        blob = _blob(3 * MiB + 17)
        await store.write(P("/big"), blob)
        _, data = await store.read_file(P("/big"))
        assert data == blob == await store.read_all(P("/big"))
        _, part = await store.read_file(P("/big"), MiB - 3, MiB + 6)
        assert part == blob[MiB - 3 : 2 * MiB + 3]

    # -- write -------------------------------------------------------------------------------

    async def test_write_returns_info_of_the_new_content(self, store: Store) -> None:
        info = await store.write(P("/a.txt"), b"abc")
        assert info.path == P("/a.txt")
        assert info.kind is EntryKind.FILE
        assert info.size == 3
        assert info.version == (await store.stat(P("/a.txt"))).version

    async def test_write_create(self, store: Store) -> None:
        info = await store.write(P("/new.txt"), b"first", mode=WriteMode.CREATE)
        assert info.size == 5
        assert await store.read_all(P("/new.txt")) == b"first"

    async def test_write_create_conflict_leaves_content(self, store: Store) -> None:
        first = await store.write(P("/a.txt"), b"first", mode=WriteMode.CREATE)
        with pytest.raises(AlreadyExistsError):
            await store.write(P("/a.txt"), b"second", mode=WriteMode.CREATE)
        assert await store.read_all(P("/a.txt")) == b"first"
        assert (await store.stat(P("/a.txt"))).version == first.version

    async def test_write_create_over_a_directory(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        with pytest.raises((IsADirectoryError_, AlreadyExistsError)):
            await store.write(P("/d"), b"x", mode=WriteMode.CREATE)
        assert (await store.stat(P("/d"))).is_dir

    async def test_write_overwrite(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"a much longer first content")
        info = await store.write(P("/a.txt"), b"short", mode=WriteMode.OVERWRITE)
        assert info.size == 5
        assert await store.read_all(P("/a.txt")) == b"short"
        assert (await store.stat(P("/a.txt"))).size == 5

    async def test_write_overwrite_creates(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"made", mode=WriteMode.OVERWRITE)
        assert await store.read_all(P("/a.txt")) == b"made"

    async def test_write_default_mode_is_overwrite(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"one")
        await store.write(P("/a.txt"), b"two")
        assert await store.read_all(P("/a.txt")) == b"two"

    async def test_write_append(self, store: Store) -> None:
        first = await store.write(P("/log"), b"one\n", mode=WriteMode.APPEND)  # creates
        assert first.size == 4
        second = await store.write(P("/log"), b"two\n", mode=WriteMode.APPEND)
        assert second.size == 8
        await store.write(P("/log"), b"", mode=WriteMode.APPEND)
        assert await store.read_all(P("/log")) == b"one\ntwo\n"
        assert (await store.stat(P("/log"))).size == 8

    async def test_write_missing_parent(self, store: Store) -> None:
        for mode in WriteMode:
            with pytest.raises(NotFoundError):
                await store.write(P("/no/such/dir/a.txt"), b"x", mode=mode)
        assert not await store.exists(P("/no"))
        assert await store.list(VPath.ROOT) == []

    async def test_write_parent_is_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"keep")
        for mode in WriteMode:
            with pytest.raises(NotADirectoryError_):
                await store.write(P("/a.txt/b.txt"), b"x", mode=mode)
        with pytest.raises(NotADirectoryError_):
            await store.write(P("/a.txt/sub/b.txt"), b"x")
        assert await store.read_all(P("/a.txt")) == b"keep"

    @pytest.mark.parametrize("mode", [WriteMode.OVERWRITE, WriteMode.APPEND])
    async def test_write_onto_a_directory(self, store: Store, mode: WriteMode) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/d/inside"), b"kept")
        with pytest.raises(IsADirectoryError_):
            await store.write(P("/d"), b"x", mode=mode)
        assert (await store.stat(P("/d"))).is_dir
        assert await store.read_all(P("/d/inside")) == b"kept"

    async def test_write_onto_the_root(self, store: Store) -> None:
        with pytest.raises(IsADirectoryError_):
            await store.write(VPath.ROOT, b"x")
        assert (await store.stat(VPath.ROOT)).is_dir

    async def test_a_mode_given_as_a_plain_string_is_that_mode(self, store: Store) -> None:
        # Store.begin_write: "create" and "append" are never taken for an overwrite.
        await store.write(P("/m.txt"), b"one", mode="create")  # type: ignore[arg-type]
        with pytest.raises(AlreadyExistsError):
            await store.write(P("/m.txt"), b"two", mode="create")  # type: ignore[arg-type]
        await store.write(P("/m.txt"), b"+", mode="append")  # type: ignore[arg-type]
        assert await store.read_all(P("/m.txt")) == b"one+"
        with pytest.raises(ValueError, match="bogus"):
            await store.write(P("/n.txt"), b"x", mode="bogus")  # type: ignore[arg-type]
        assert not await store.exists(P("/n.txt"))

    # -- versions ----------------------------------------------------------------------------

    async def test_version_changes_on_every_write(self, store: Store) -> None:
        path = P("/v.txt")
        seen = [(await store.write(path, b"same")).version]
        seen.append((await store.write(path, b"same")).version)  # identical content
        seen.append((await store.write(path, b"other")).version)
        seen.append((await store.write(path, b"!", mode=WriteMode.APPEND)).version)
        seen.append((await store.write(path, b"", mode=WriteMode.APPEND)).version)
        seen.append((await store.write(path, b"other!")).version)  # same content and size
        assert all(seen)
        assert len(set(seen)) == len(seen)
        assert (await store.stat(path)).version == seen[-1]

    async def test_version_changes_when_a_file_is_recreated(self, store: Store) -> None:
        old = await store.write(P("/v.txt"), b"same")
        await store.delete(P("/v.txt"))
        new = await store.write(P("/v.txt"), b"same")
        assert new.version != old.version
        with pytest.raises(ConflictError):
            await store.write(P("/v.txt"), b"stale", if_version=old.version)
        assert await store.read_all(P("/v.txt")) == b"same"

    async def test_version_is_stable_without_writes(self, store: Store) -> None:
        written = await store.write(P("/v.txt"), b"content")
        await store.read_all(P("/v.txt"))
        await store.read_range(P("/v.txt"), 2, 3)
        first = (await store.stat(P("/v.txt"))).version
        await store.write(P("/other.txt"), b"unrelated")
        await store.mkdir(P("/dir"))
        second = (await store.stat(P("/v.txt"))).version
        listed = {i.path: i.version for i in await store.list(VPath.ROOT)}
        assert first == second == written.version == listed[P("/v.txt")]

    async def test_if_version_match(self, store: Store) -> None:
        v1 = await store.write(P("/c.txt"), b"one")
        v2 = await store.write(P("/c.txt"), b"two", if_version=v1.version)
        assert await store.read_all(P("/c.txt")) == b"two"
        v3 = await store.write(P("/c.txt"), b"+", mode=WriteMode.APPEND, if_version=v2.version)
        assert await store.read_all(P("/c.txt")) == b"two+"
        assert len({v1.version, v2.version, v3.version}) == 3

    async def test_if_version_mismatch(self, store: Store) -> None:
        v1 = await store.write(P("/c.txt"), b"one")
        v2 = await store.write(P("/c.txt"), b"two")
        for mode in (WriteMode.OVERWRITE, WriteMode.APPEND):
            with pytest.raises(ConflictError):
                await store.write(P("/c.txt"), b"stale", mode=mode, if_version=v1.version)
        with pytest.raises(ConflictError):
            await store.write(P("/c.txt"), b"stale", if_version="not-a-version")
        assert await store.read_all(P("/c.txt")) == b"two"
        assert (await store.stat(P("/c.txt"))).version == v2.version

    async def test_if_version_on_a_missing_file(self, store: Store) -> None:
        other = await store.write(P("/other.txt"), b"x")
        for mode in (WriteMode.OVERWRITE, WriteMode.APPEND):
            with pytest.raises(ConflictError):
                await store.write(P("/c.txt"), b"x", mode=mode, if_version=other.version)
        assert not await store.exists(P("/c.txt"))

    # -- delete ------------------------------------------------------------------------------

    async def test_delete_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        await store.write(P("/b.txt"), b"y")
        await store.delete(P("/a.txt"))
        assert not await store.exists(P("/a.txt"))
        with pytest.raises(NotFoundError):
            await store.read_all(P("/a.txt"))
        assert await store.read_all(P("/b.txt")) == b"y"

    async def test_delete_recursive_on_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        await store.delete(P("/a.txt"), recursive=True)
        assert not await store.exists(P("/a.txt"))

    async def test_delete_empty_directory(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.delete(P("/d"))
        assert not await store.exists(P("/d"))
        assert await store.list(VPath.ROOT) == []

    async def test_delete_non_empty_directory_needs_recursive(self, store: Store) -> None:
        await _build(store, {"/d": None, "/d/a.txt": b"a", "/d/sub": None, "/d/sub/b": b"b"})
        with pytest.raises(DirectoryNotEmptyError):
            await store.delete(P("/d"))
        assert await store.read_all(P("/d/a.txt")) == b"a"
        assert await store.read_all(P("/d/sub/b")) == b"b"
        assert len(await _walk(store, "/d")) == 3

    async def test_delete_recursive(self, store: Store) -> None:
        await _build(
            store,
            {
                "/d": None,
                "/d/a.txt": b"a",
                "/d/sub": None,
                "/d/sub/deeper": None,
                "/d/sub/deeper/c": b"c",
                "/d/empty": None,
                "/keep.txt": b"keep",
            },
        )
        await store.delete(P("/d"), recursive=True)
        assert not await store.exists(P("/d"))
        assert not await store.exists(P("/d/sub/deeper/c"))
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/keep.txt"]
        await store.mkdir(P("/d"))  # the name is free again, and empty
        assert await store.list(P("/d")) == []

    async def test_delete_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.delete(P("/nope"))
        with pytest.raises(NotFoundError):
            await store.delete(P("/nope"), recursive=True)
        with pytest.raises(NotFoundError):
            await store.delete(P("/no/such/file"))

    async def test_delete_root_is_refused(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        with pytest.raises(OperationError):
            await store.delete(VPath.ROOT, recursive=True)
        assert await store.read_all(P("/a.txt")) == b"x"

    # -- list --------------------------------------------------------------------------------

    async def test_list_direct_children(self, store: Store) -> None:
        await _build(
            store,
            {
                "/d": None,
                "/d/a.txt": b"12345",
                "/d/empty.txt": b"",
                "/d/sub": None,
                "/d/sub/deep.txt": b"deep",
                "/top.txt": b"top",
            },
        )
        assert await _listing(store, "/d") == {
            "/d/a.txt": (EntryKind.FILE, 5),
            "/d/empty.txt": (EntryKind.FILE, 0),
            "/d/sub": (EntryKind.DIRECTORY, 0),
        }
        root = await store.list(VPath.ROOT)
        assert {str(i.path): i.kind for i in root} == {
            "/d": EntryKind.DIRECTORY,
            "/top.txt": EntryKind.FILE,
        }
        files = {i.path: i for i in await store.list(P("/d")) if i.is_file}
        for path, info in files.items():
            assert info.version == (await store.stat(path)).version

    async def test_list_empty(self, store: Store) -> None:
        assert await store.list(VPath.ROOT) == []
        await store.mkdir(P("/d"))
        assert await store.list(P("/d")) == []

    async def test_list_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"x")
        with pytest.raises(NotADirectoryError_):
            await store.list(P("/a.txt"))

    async def test_list_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.list(P("/nope"))

    # -- mkdir -------------------------------------------------------------------------------

    async def test_mkdir(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.mkdir(P("/d/e"))
        assert (await store.stat(P("/d/e"))).is_dir
        assert await _listing(store, "/d") == {"/d/e": (EntryKind.DIRECTORY, 0)}

    async def test_mkdir_exists(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/d/keep"), b"k")
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(P("/d"))
        assert await store.read_all(P("/d/keep")) == b"k"
        await store.write(P("/f"), b"file")
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(P("/f"))
        assert await store.read_all(P("/f")) == b"file"
        with pytest.raises(AlreadyExistsError):
            await store.mkdir(VPath.ROOT)

    async def test_mkdir_missing_parent(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.mkdir(P("/a/b"))
        assert not await store.exists(P("/a"))

    async def test_mkdir_parent_is_a_file(self, store: Store) -> None:
        await store.write(P("/f"), b"file")
        with pytest.raises(NotADirectoryError_):
            await store.mkdir(P("/f/d"))
        assert await store.read_all(P("/f")) == b"file"

    # -- rename ------------------------------------------------------------------------------

    async def test_rename_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"content")
        await store.rename(P("/a.txt"), P("/b.txt"))
        assert not await store.exists(P("/a.txt"))
        assert await store.read_all(P("/b.txt")) == b"content"
        await store.mkdir(P("/d"))
        await store.rename(P("/b.txt"), P("/d/c.txt"))  # into another directory
        assert await store.read_all(P("/d/c.txt")) == b"content"
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/d"]

    async def test_rename_directory(self, store: Store) -> None:
        await _build(
            store,
            {"/src": None, "/src/a.txt": b"a", "/src/sub": None, "/src/sub/b.txt": b"b"},
        )
        await store.mkdir(P("/other"))
        await store.rename(P("/src"), P("/other/dst"))
        assert not await store.exists(P("/src"))
        assert await store.read_all(P("/other/dst/a.txt")) == b"a"
        assert await store.read_all(P("/other/dst/sub/b.txt")) == b"b"
        assert {str(i.path) for i in await _walk(store, "/other")} == {
            "/other/dst",
            "/other/dst/a.txt",
            "/other/dst/sub",
            "/other/dst/sub/b.txt",
        }

    @pytest.mark.parametrize(
        ("src", "dst"),
        [("/a.txt", "/b.txt"), ("/a.txt", "/d"), ("/d", "/b.txt"), ("/d", "/e")],
    )
    async def test_rename_onto_existing(self, store: Store, src: str, dst: str) -> None:
        tree: dict[str, bytes | None] = {
            "/a.txt": b"a",
            "/b.txt": b"b",
            "/d": None,
            "/d/in-d": b"in d",
            "/e": None,
        }
        await _build(store, tree)
        with pytest.raises(AlreadyExistsError):
            await store.rename(P(src), P(dst))
        for raw, content in tree.items():
            if content is None:
                assert (await store.stat(P(raw))).is_dir
            else:
                assert await store.read_all(P(raw)) == content
        assert await store.list(P("/e")) == []

    async def test_rename_into_own_subtree_is_refused(self, store: Store) -> None:
        await _build(store, {"/a": None, "/a/b": None, "/a/b/f": b"f"})
        for dst in ("/a/b/c", "/a/new", "/a/b/f/x"):
            with pytest.raises(OperationError):
                await store.rename(P("/a"), P(dst))
        with pytest.raises(OperationError):
            await store.rename(P("/a"), P("/a"))
        assert {str(i.path) for i in await _walk(store)} == {"/a", "/a/b", "/a/b/f"}
        assert await store.read_all(P("/a/b/f")) == b"f"

    async def test_rename_missing(self, store: Store) -> None:
        with pytest.raises(NotFoundError):
            await store.rename(P("/nope"), P("/dst"))
        with pytest.raises(NotFoundError):
            await store.rename(P("/no/such"), P("/dst"))
        assert not await store.exists(P("/dst"))

    async def test_rename_to_a_missing_parent(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"a")
        with pytest.raises(NotFoundError):
            await store.rename(P("/a.txt"), P("/no/such/b.txt"))
        assert await store.read_all(P("/a.txt")) == b"a"

    async def test_rename_to_a_parent_that_is_a_file(self, store: Store) -> None:
        await store.write(P("/a.txt"), b"a")
        await store.write(P("/f"), b"f")
        with pytest.raises(NotADirectoryError_):
            await store.rename(P("/a.txt"), P("/f/b.txt"))
        assert await store.read_all(P("/a.txt")) == b"a"
        assert await store.read_all(P("/f")) == b"f"

    # -- derived: exists, read_all, makedirs -------------------------------------------------

    async def test_exists(self, store: Store) -> None:
        await _build(store, {"/d": None, "/d/f": b"x"})
        assert await store.exists(VPath.ROOT)
        assert await store.exists(P("/d"))
        assert await store.exists(P("/d/f"))
        assert not await store.exists(P("/nope"))
        assert not await store.exists(P("/d/nope"))
        assert not await store.exists(P("/nope/deeper"))

    async def test_read_all(self, store: Store) -> None:
        await store.write(P("/f"), b"whole content")
        assert await store.read_all(P("/f")) == b"whole content"

    async def test_makedirs_nested(self, store: Store) -> None:
        await store.makedirs(P("/a/b/c"))
        for raw in ("/a", "/a/b", "/a/b/c"):
            assert (await store.stat(P(raw))).is_dir
        assert await store.list(P("/a/b/c")) == []
        await store.makedirs(P("/a/b/x/y"))  # partly existing
        assert (await store.stat(P("/a/b/x/y"))).is_dir
        assert await _listing(store, "/a/b") == {
            "/a/b/c": (EntryKind.DIRECTORY, 0),
            "/a/b/x": (EntryKind.DIRECTORY, 0),
        }

    async def test_makedirs_exist_ok(self, store: Store) -> None:
        await store.makedirs(P("/a/b"))
        await store.write(P("/a/b/keep"), b"k")
        await store.makedirs(P("/a/b"))  # exist_ok defaults to True
        await store.makedirs(P("/a/b"), exist_ok=True)
        await store.makedirs(P("/a"), exist_ok=True)
        with pytest.raises(AlreadyExistsError):
            await store.makedirs(P("/a/b"), exist_ok=False)
        await store.makedirs(P("/a/new"), exist_ok=False)  # a new leaf is fine
        assert (await store.stat(P("/a/new"))).is_dir
        assert await store.read_all(P("/a/b/keep")) == b"k"
        await store.makedirs(VPath.ROOT)  # the root always exists

    async def test_makedirs_through_a_file(self, store: Store) -> None:
        await store.write(P("/f"), b"file")
        with pytest.raises(NotADirectoryError_):
            await store.makedirs(P("/f/a/b"))
        with pytest.raises(NotADirectoryError_):
            await store.makedirs(P("/f"))
        assert await store.read_all(P("/f")) == b"file"

    # -- derived: walk -----------------------------------------------------------------------

    async def test_walk_everything_parents_first(self, store: Store) -> None:
        await _build(store, WALK_TREE)
        entries = await _walk(store)
        paths = [str(i.path) for i in entries]
        assert sorted(paths) == sorted(WALK_TREE)
        assert len(paths) == len(set(paths))
        position = {p: n for n, p in enumerate(paths)}
        for p in paths:
            parent = str(P(p).parent)
            if parent != "/":
                assert position[parent] < position[p], f"{parent} after {p} in {paths}"
        for info in entries:
            expected = WALK_TREE[str(info.path)]
            if expected is None:
                assert info.is_dir
            else:
                assert info.is_file
                assert info.size == len(expected)

    async def test_walk_max_depth(self, store: Store) -> None:
        await _build(store, WALK_TREE)
        one = {str(i.path) for i in await _walk(store, max_depth=1)}
        assert one == {"/a", "/e", "/top.txt"}
        two = {str(i.path) for i in await _walk(store, max_depth=2)}
        assert two == one | {"/a/x.txt", "/a/b"}
        three = {str(i.path) for i in await _walk(store, max_depth=3)}
        assert three == two | {"/a/b/y.txt", "/a/b/c"}
        assert {str(i.path) for i in await _walk(store, max_depth=10)} == set(WALK_TREE)

    async def test_walk_a_subtree(self, store: Store) -> None:
        await _build(store, WALK_TREE)
        below = {str(i.path) for i in await _walk(store, "/a/b")}
        assert below == {"/a/b/y.txt", "/a/b/c", "/a/b/c/z.txt"}  # not /a/b itself
        assert {str(i.path) for i in await _walk(store, "/a", max_depth=1)} == {
            "/a/x.txt",
            "/a/b",
        }
        assert await _walk(store, "/e") == []

    async def test_walk_empty_and_errors(self, store: Store) -> None:
        assert await _walk(store) == []
        await store.write(P("/f"), b"x")
        with pytest.raises(NotADirectoryError_):
            await _walk(store, "/f")
        with pytest.raises(NotFoundError):
            await _walk(store, "/nope")

    # -- derived: copy_file ------------------------------------------------------------------

    async def test_copy_file_small(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        src = await store.write(P("/a.bin"), ALL_BYTES)
        info = await store.copy_file(P("/a.bin"), P("/d/b.bin"))
        assert info.path == P("/d/b.bin")
        assert info.size == 256
        assert info.version == (await store.stat(P("/d/b.bin"))).version
        assert await store.read_all(P("/d/b.bin")) == ALL_BYTES
        assert await store.read_all(P("/a.bin")) == ALL_BYTES
        assert (await store.stat(P("/a.bin"))).version == src.version

    @pytest.mark.parametrize("size", [MiB, MiB + 1, 2 * MiB + 12345])
    async def test_copy_file_large(self, store: Store, size: int) -> None:
        data = _blob(size, seed=size)
        await store.write(P("/big.bin"), data)
        info = await store.copy_file(P("/big.bin"), P("/copy.bin"))
        assert info.size == size
        assert (await store.stat(P("/copy.bin"))).size == size
        assert await store.read_all(P("/copy.bin")) == data
        assert await store.read_all(P("/big.bin")) == data

    async def test_copy_file_overwrite_flag(self, store: Store) -> None:
        await store.write(P("/src"), b"new content")
        await store.write(P("/dst"), b"old content that is longer")
        with pytest.raises(AlreadyExistsError):
            await store.copy_file(P("/src"), P("/dst"))
        assert await store.read_all(P("/dst")) == b"old content that is longer"
        await store.copy_file(P("/src"), P("/dst"), overwrite=True)
        assert await store.read_all(P("/dst")) == b"new content"

    async def test_copy_file_large_overwrite(self, store: Store) -> None:
        data = _blob(3 * MiB + 7, seed=1)
        await store.write(P("/src"), data)
        await store.write(P("/dst"), _blob(4 * MiB, seed=2))
        with pytest.raises(AlreadyExistsError):
            await store.copy_file(P("/src"), P("/dst"))
        await store.copy_file(P("/src"), P("/dst"), overwrite=True)
        assert await store.read_all(P("/dst")) == data

    async def test_copy_file_errors(self, store: Store) -> None:
        await store.mkdir(P("/d"))
        await store.write(P("/f"), b"x")
        with pytest.raises(NotFoundError):
            await store.copy_file(P("/nope"), P("/dst"))
        with pytest.raises(IsADirectoryError_):
            await store.copy_file(P("/d"), P("/dst"))
        with pytest.raises(NotFoundError):
            await store.copy_file(P("/f"), P("/no/such/dst"))
        with pytest.raises(IsADirectoryError_):
            await store.copy_file(P("/f"), P("/d"), overwrite=True)
        assert not await store.exists(P("/dst"))
        assert (await store.stat(P("/d"))).is_dir

    # -- content and names -------------------------------------------------------------------

    async def test_content_that_looks_like_labels(self, store: Store) -> None:
        readable = b"---\ntags: [notes]\n---\nbody\n"
        assert (await store.write(P("/notes.md"), readable)).size == len(readable)
        assert await store.read_all(P("/notes.md")) == readable
        unreadable = {
            "/notes.md": b"---\ntags: [unclosed\n---\nbody\n",  # front matter, not YAML
            "/notes.md.labels.yaml": b"roles: 42\n",  # a sidecar of the wrong shape
            "/other.md": b"---\nroles: {a: b}\n---\n",
        }
        for raw, data in unreadable.items():
            if not self.reads_labels:
                await store.write(P(raw), data)
                assert await store.read_all(P(raw)) == data
                continue
            with pytest.raises(LabelError, match="labels could not be read") as caught:
                await store.write(P(raw), data)
            assert "\n" not in str(caught.value)
        if self.reads_labels:  # refused whole: nothing written, nothing changed
            assert await store.read_all(P("/notes.md")) == readable
            assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/notes.md"]

    async def test_binary_content_round_trips(self, store: Store) -> None:
        data = b"\x00" * 3 + ALL_BYTES + bytes(reversed(ALL_BYTES)) + b"\x00\r\n\x00\xff"
        info = await store.write(P("/bin"), data)
        assert info.size == len(data)
        assert await store.read_all(P("/bin")) == data
        assert await store.read_range(P("/bin"), 3, 256) == ALL_BYTES
        assert await store.read_range(P("/bin"), 0, 4) == b"\x00\x00\x00\x00"
        await store.write(P("/bin"), b"\x00", mode=WriteMode.APPEND)
        assert await store.read_all(P("/bin")) == data + b"\x00"
        assert await store.read_range(P("/bin"), len(data)) == b"\x00"

    @pytest.mark.parametrize(
        "name",
        [
            "café.txt",
            "cafe\u0301-decomposed.txt",
            "naïve résumé",
            "文件.md",
            "Ωμέγα",
            "emoji-😀.bin",
            "ñ",
            "with space and 'quote'",
        ],
    )
    async def test_unicode_names_round_trip(self, store: Store, name: str) -> None:
        nfc = unicodedata.normalize("NFC", name)
        nfd = unicodedata.normalize("NFD", name)
        await store.mkdir(P(f"/{nfd}-dir"))
        await store.write(P(f"/{nfd}-dir/{nfd}"), name.encode())
        assert await store.read_all(P(f"/{nfc}-dir/{nfc}")) == name.encode()
        assert await store.read_all(P(f"/{nfd}-dir/{nfd}")) == name.encode()
        [listed_dir] = await store.list(VPath.ROOT)
        assert listed_dir.path.name == f"{nfc}-dir"
        assert listed_dir.is_dir
        [listed] = await store.list(listed_dir.path)
        assert listed.path.name == nfc
        assert listed.path == P(f"/{nfd}-dir/{nfd}")
        assert await store.read_all(listed.path) == name.encode()
        await store.rename(listed.path, P(f"/{nfc}-dir/{nfc}.moved"))
        assert await store.read_all(P(f"/{nfd}-dir/{nfd}.moved")) == name.encode()
        await store.delete(P(f"/{nfd}-dir"), recursive=True)
        assert await store.list(VPath.ROOT) == []

    async def test_names_with_dots(self, store: Store) -> None:
        names = ["..test", "report..final.md", "...", ".hidden", "trailing.", "a.b.c"]
        await store.mkdir(P("/..dir"))
        for name in names:
            await store.write(P(f"/..dir/{name}"), name.encode())
        assert {i.path.name for i in await store.list(P("/..dir"))} == set(names)
        for name in names:
            assert await store.read_all(P("/..dir") / name) == name.encode()
            assert (await store.stat(P(f"/..dir/{name}"))).size == len(name)
        await store.rename(P("/..dir/..test"), P("/..dir/...test"))
        assert await store.read_all(P("/..dir/...test")) == b"..test"
        assert not await store.exists(P("/..dir/..test"))
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/..dir"]

    async def test_large_file_small_ranges_at_the_end(self, store: Store) -> None:
        size = 5 * MiB + 3
        data = _blob(size, seed=5)
        info = await store.write(P("/large.bin"), data)
        assert info.size == size
        assert (await store.stat(P("/large.bin"))).size == size
        path = P("/large.bin")
        assert await store.read_range(path, size - 1, 1) == data[-1:]
        assert await store.read_range(path, size - 10, 10) == data[-10:]
        assert await store.read_range(path, size - 10) == data[-10:]
        assert await store.read_range(path, size - 7, 100) == data[-7:]
        assert await store.read_range(path, size, 1) == b""
        for offset in (0, MiB - 1, MiB, 4 * MiB + 17, size - 4097):
            assert await store.read_range(path, offset, 4096) == data[offset : offset + 4096]
        assert await store.read_range(path, 5 * MiB - 2, 5) == data[5 * MiB - 2 : 5 * MiB + 3]
        assert await store.read_all(path) == data

    # -- concurrency -------------------------------------------------------------------------

    async def test_concurrent_tasks_lose_no_update(self, store: Store) -> None:
        counter = P("/counter")
        await store.write(counter, b"0")
        tasks, each = 20, 5
        conflicts = await asyncio.gather(
            *(_increment(store, counter, each, threaded=False) for _ in range(tasks))
        )
        assert int(await store.read_all(counter)) == tasks * each
        assert sum(conflicts) > 0  # the writers did collide, and the losers retried

    def test_concurrent_threads_lose_no_update(self, store: Store) -> None:
        counter = P("/counter")
        asyncio.run(store.write(counter, b"0"))
        threads, each = 4, 25
        start = threading.Barrier(threads)

        def worker() -> int:
            start.wait(timeout=30)
            return asyncio.run(_increment(store, counter, each, threaded=True))

        with ThreadPoolExecutor(threads) as pool:
            futures = [pool.submit(worker) for _ in range(threads)]
            for future in futures:
                future.result(timeout=120)
        assert int(asyncio.run(store.read_all(counter))) == threads * each

    def test_readers_never_see_a_mix(self, store: Store) -> None:
        path = P("/flip.bin")
        size = MiB + 1
        asyncio.run(store.write(path, b"A" * size))
        done = threading.Event()
        seen: set[bytes] = set()

        def writer() -> None:
            try:
                for n in range(20):
                    asyncio.run(store.write(path, (b"B" if n % 2 == 0 else b"A") * size))
            finally:
                done.set()

        def reader() -> int:
            reads = 0
            while not done.is_set() or reads == 0:
                data = asyncio.run(store.read_all(path))
                assert len(data) == size
                assert data.count(data[:1]) == size, "a read saw a mix of two writes"
                seen.add(data[:1])
                reads += 1
            return reads

        with ThreadPoolExecutor(3) as pool:
            readers = [pool.submit(reader) for _ in range(2)]
            pool.submit(writer).result(timeout=120)
            assert all(r.result(timeout=120) > 0 for r in readers)
        assert seen <= {b"A", b"B"}
        assert asyncio.run(store.read_all(path)) == b"A" * size

    # -- large files, many writers, conflicts -------------------------------------------------

    async def test_ranges_of_a_12_mib_file(self, store: Store) -> None:
        size = 12 * MiB + 5
        data = _blob(size, seed=12)
        await store.mkdir(P("/big"))
        path = P("/big/twelve.bin")
        assert (await store.write(path, data)).size == size
        cases: list[tuple[int, int | None]] = [
            (0, 1),
            (0, 100),
            (0, 64 * 1024 + 1),
            (1, MiB),
            (6 * MiB - 1000, 3 * MiB + 2000),  # the middle, across many chunk boundaries
            (size // 2, 10),
            (size - 100, 100),
            (size - 1, 1),
            (size - 5, 1000),
            (size - 100, None),
            (size, 10),
        ]
        for boundary in (4096, 64 * 1024, MiB, 4 * MiB, 6 * MiB, 8 * MiB, 12 * MiB):
            cases += [(boundary - 1, 2), (boundary - 3, 7), (boundary, 1), (boundary - 1, 1)]
        for offset, length in cases:
            end = size if length is None else offset + length
            expected = data[offset:end]
            assert await store.read_range(path, offset, length) == expected, (offset, length)
            info, part = await store.read_file(path, offset, length)
            assert part == expected, (offset, length)
            assert info.size == size
        assert await store.read_all(path) == data

    async def test_appends_across_chunk_boundaries(self, store: Store) -> None:
        path = P("/grow.bin")
        expected = b""
        versions: list[str | None] = []
        pieces = [1, 1023, 1024, 1025, 4095, 65535, 65536, 70001, 3, 300_000, 0, MiB + 7]
        for n, size in enumerate(pieces):
            piece = _blob(size, seed=100 + n)
            info = await store.write(path, piece, mode=WriteMode.APPEND)
            expected += piece
            versions.append(info.version)
            assert info.size == len(expected)
        assert len(set(versions)) == len(versions)
        assert await store.read_all(path) == expected
        total = len(expected)
        for offset in (0, 1023, 1024, 2047, 65535, 65536, 131071, 500_000, total - 3):
            assert (
                await store.read_range(path, offset, 70_000) == expected[offset : offset + 70_000]
            )
        await store.write(path, b"short", mode=WriteMode.OVERWRITE)
        await store.write(path, b"+tail", mode=WriteMode.APPEND)
        assert await store.read_all(path) == b"short+tail"

    async def test_many_writers_exactly_one_wins_each_round(self, store: Store) -> None:
        path = P("/race.txt")
        version = (await store.write(path, b"start")).version
        writers = 12
        for round_ in range(10):

            async def attempt(n: int, expected: str | None, r: int = round_) -> FileInfo | None:
                await asyncio.sleep(0)  # all writers start before any one finishes
                try:
                    return await store.write(path, b"round %d by %d" % (r, n), if_version=expected)
                except ConflictError:
                    return None

            results = await asyncio.gather(*(attempt(n, version) for n in range(writers)))
            winners = [(n, info) for n, info in enumerate(results) if info is not None]
            assert len(winners) == 1, f"round {round_}: {len(winners)} writers won"
            [(winner, info)] = winners
            assert await store.read_all(path) == b"round %d by %d" % (round_, winner)
            assert info.version != version
            assert (await store.stat(path)).version == info.version
            version = info.version

    def test_many_threads_exactly_one_wins_each_round(self, store: Store) -> None:
        path = P("/race.txt")
        version = asyncio.run(store.write(path, b"start")).version
        writers = 6
        with ThreadPoolExecutor(writers) as pool:
            for round_ in range(6):
                start = threading.Barrier(writers)

                def attempt(
                    n: int, expected: str | None, r: int = round_, start: threading.Barrier = start
                ) -> FileInfo | None:
                    start.wait(timeout=30)
                    try:
                        return asyncio.run(
                            store.write(path, b"round %d by %d" % (r, n), if_version=expected)
                        )
                    except ConflictError:
                        return None

                futures = [pool.submit(attempt, n, version) for n in range(writers)]
                results = [f.result(timeout=120) for f in futures]
                winners = [(n, info) for n, info in enumerate(results) if info is not None]
                assert len(winners) == 1, f"round {round_}: {len(winners)} writers won"
                [(winner, info)] = winners
                assert asyncio.run(store.read_all(path)) == b"round %d by %d" % (round_, winner)
                version = info.version

    async def test_concurrent_appends_lose_nothing(self, store: Store) -> None:
        path = P("/log.txt")
        tasks, each = 10, 10

        async def appender(task: int) -> None:
            for n in range(each):
                await store.write(path, b"task %02d line %02d\n" % (task, n), mode=WriteMode.APPEND)
                await asyncio.sleep(0)

        await asyncio.gather(*(appender(t) for t in range(tasks)))
        lines = (await store.read_all(path)).splitlines()
        expected = {b"task %02d line %02d" % (t, n) for t in range(tasks) for n in range(each)}
        assert len(lines) == tasks * each
        assert set(lines) == expected
        for task in range(tasks):  # each writer's lines stay in its own order
            mine = [line for line in lines if line.startswith(b"task %02d " % task)]
            assert mine == sorted(mine)

    def test_concurrent_threads_append_lose_nothing(self, store: Store) -> None:
        path = P("/log.txt")
        threads, each = 4, 15
        start = threading.Barrier(threads)

        def appender(thread: int) -> None:
            start.wait(timeout=30)
            for n in range(each):
                line = b"thread %d line %02d\n" % (thread, n)
                asyncio.run(store.write(path, line, mode=WriteMode.APPEND))

        with ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(appender, t) for t in range(threads)]:
                future.result(timeout=120)
        lines = asyncio.run(store.read_all(path)).splitlines()
        assert len(lines) == threads * each
        assert set(lines) == {
            b"thread %d line %02d" % (t, n) for t in range(threads) for n in range(each)
        }

    async def test_conflicts_are_conflict_errors_that_name_the_path(self, store: Store) -> None:
        path = P("/doc.txt")
        first = await store.write(path, b"secret first content")
        second = await store.write(path, b"secret second content")
        appended = await store.write(path, b"!", mode=WriteMode.APPEND)
        stale_cases: list[tuple[WriteMode, str | None]] = [
            (WriteMode.OVERWRITE, first.version),
            (WriteMode.APPEND, first.version),
            (WriteMode.OVERWRITE, second.version),
            (WriteMode.APPEND, second.version),
        ]
        for mode, stale in stale_cases:
            with pytest.raises(ConflictError) as caught:
                await store.write(path, b"late", mode=mode, if_version=stale)
            message = str(caught.value)
            assert message.startswith(str(path)), message
            assert "\n" not in message and "secret" not in message
        assert await store.read_all(path) == b"secret second content!"
        assert (await store.stat(path)).version == appended.version
        await store.delete(path)
        with pytest.raises(ConflictError):
            await store.write(path, b"late", if_version=appended.version)
        assert not await store.exists(path)
        again = await store.write(path, b"new")
        with pytest.raises(ConflictError):
            await store.write(path, b"late", if_version=appended.version)
        assert (await store.write(path, b"newer", if_version=again.version)).size == 5
