"""The store contract, files: stat, read_range, read_file, write, versions."""

from __future__ import annotations

import time

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.testing._contract_support import (
    ContractBase,
    MiB,
    P,
    blob,
)

__all__ = ["FileContract"]


class FileContract(ContractBase):
    """The store contract, files: stat, read_range, read_file, write, versions."""

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
        big = blob(3 * MiB + 17)
        await store.write(P("/big"), big)
        _, data = await store.read_file(P("/big"))
        assert data == big == await store.read_all(P("/big"))
        _, part = await store.read_file(P("/big"), MiB - 3, MiB + 6)
        assert part == big[MiB - 3 : 2 * MiB + 3]

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
