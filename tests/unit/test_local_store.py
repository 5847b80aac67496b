"""LocalStore: ordinary behaviour (the attacks live in tests/security/test_local_confinement.py)."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import stat
import threading
import time
import unicodedata
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    InvalidPathError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
)
from bastion.core.models import EntryKind, WriteMode
from bastion.core.paths import VPath
from bastion.stores import local
from bastion.stores.local import TEMP_PREFIX, LocalStore

P = VPath.parse
T = TypeVar("T")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def store(root: Path) -> Iterator[LocalStore]:
    s = LocalStore(root)
    yield s
    s.close()


def _temps(directory: Path) -> list[str]:
    return [n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX)]


def _drive(coro: Coroutine[object, object, T]) -> T:
    """Run a store coroutine to completion from synchronous code (a thread with no loop)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


def _open_fds() -> set[int]:
    gc.collect()  # let stores other tests dropped release their descriptors first
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


# -- construction ---------------------------------------------------------------------------------


def test_missing_root_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="create=True"):
        LocalStore(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()


def test_root_that_is_a_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(ConfigurationError):
        LocalStore(tmp_path / "file")
    with pytest.raises(ConfigurationError):
        LocalStore(tmp_path / "file", create=True)


def test_create_makes_the_root_and_its_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "root"
    store = LocalStore(target, create=True)
    try:
        assert target.is_dir()
    finally:
        store.close()


async def test_root_path_given_through_a_link_is_accepted(tmp_path: Path) -> None:
    # The root is developer configuration: a link in *its* path is resolved once, at startup.
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_bytes(b"A")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    store = LocalStore(tmp_path / "alias")
    try:
        assert await store.read_all(P("/a.txt")) == b"A"
    finally:
        store.close()


def test_describe_and_repr_never_show_the_host_path(store: LocalStore, root: Path) -> None:
    assert store.kind == "local"
    assert store.describe() == "local disk"
    assert str(root) not in repr(store)


async def test_closed_store_refuses_every_call(root: Path) -> None:
    store = LocalStore(root)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await store.stat(VPath.ROOT)
    with pytest.raises(StoreError, match="closed"):
        await store.write(P("/a"), b"x")


# -- stat, read -----------------------------------------------------------------------------------


async def test_write_then_stat_and_read(store: LocalStore, root: Path) -> None:
    info = await store.write(P("/a.txt"), b"hello")
    assert info.path == P("/a.txt")
    assert info.kind is EntryKind.FILE
    assert info.size == 5
    assert (root / "a.txt").read_bytes() == b"hello"
    stated = await store.stat(P("/a.txt"))
    assert stated.version == info.version
    assert stated.mtime == info.mtime
    assert await store.read_all(P("/a.txt")) == b"hello"


async def test_stat_root_and_directories(store: LocalStore, root: Path) -> None:
    (root / "d").mkdir()
    assert (await store.stat(VPath.ROOT)).is_dir
    info = await store.stat(P("/d"))
    assert info.is_dir
    assert info.version is None
    assert info.size == 0


async def test_missing_entries(store: LocalStore, root: Path) -> None:
    (root / "file").write_bytes(b"x")
    for call in (
        lambda: store.stat(P("/nope")),
        lambda: store.read_all(P("/nope")),
        lambda: store.list(P("/nope")),
        lambda: store.delete(P("/nope")),
        lambda: store.stat(P("/no/such/deep")),
    ):
        with pytest.raises(NotFoundError):
            await call()
    assert not await store.exists(P("/nope"))
    assert await store.exists(P("/file"))


async def test_file_used_as_a_directory(store: LocalStore, root: Path) -> None:
    (root / "file").write_bytes(b"x")
    with pytest.raises(NotADirectoryError_, match="/file is a file"):
        await store.stat(P("/file/child"))
    with pytest.raises(NotADirectoryError_):
        await store.list(P("/file"))
    with pytest.raises(NotADirectoryError_):
        await store.write(P("/file/child"), b"y")
    assert (root / "file").read_bytes() == b"x"


async def test_reading_a_directory(store: LocalStore, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(IsADirectoryError_):
        await store.read_all(P("/d"))
    with pytest.raises(IsADirectoryError_):
        await store.read_all(VPath.ROOT)


@pytest.mark.parametrize(
    ("offset", "length", "expected"),
    [
        (0, None, b"0123456789"),
        (0, 3, b"012"),
        (4, 3, b"456"),
        (8, 10, b"89"),
        (10, 5, b""),
        (50, None, b""),
        (3, 0, b""),
        (7, None, b"789"),
        (0, 10**15, b"0123456789"),
    ],
)
async def test_read_range(
    store: LocalStore, root: Path, offset: int, length: int | None, expected: bytes
) -> None:
    (root / "digits").write_bytes(b"0123456789")
    assert await store.read_range(P("/digits"), offset, length) == expected


async def test_read_range_rejects_negative_values(store: LocalStore, root: Path) -> None:
    (root / "f").write_bytes(b"abc")
    with pytest.raises(ValueError, match="non-negative"):
        await store.read_range(P("/f"), -1, 2)
    with pytest.raises(ValueError, match="non-negative"):
        await store.read_range(P("/f"), 0, -2)


async def test_read_range_reads_only_the_range(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "big").write_bytes(bytes(range(256)) * 16384)  # 4 MiB
    asked: list[tuple[int, int]] = []
    real_pread, real_preadv = os.pread, os.preadv

    def spy(fd: int, n: int, offset: int) -> bytes:
        asked.append((n, offset))
        return real_pread(fd, n, offset)

    def spy_v(fd: int, buffers: list[bytearray], offset: int, flags: int = 0) -> int:
        asked.append((sum(len(b) for b in buffers), offset))  # the cached read, on the loop
        return real_preadv(fd, buffers, offset, flags)

    monkeypatch.setattr(os, "pread", spy)
    monkeypatch.setattr(os, "preadv", spy_v)
    data = await store.read_range(P("/big"), 1_000_000, 100)
    assert data == (bytes(range(256)) * 16384)[1_000_000:1_000_100]
    assert asked == [(100, 1_000_000)]
    asked.clear()
    assert len(await store.read_range(P("/big"), 4 * 1024 * 1024 - 5, 10**12)) == 5
    assert sum(n for n, _ in asked) == 5


async def test_large_file_round_trip(store: LocalStore) -> None:
    payload = os.urandom(3 * 1024 * 1024 + 17)
    await store.write(P("/big.bin"), payload)
    assert await store.read_all(P("/big.bin")) == payload
    copied = await store.copy_file(P("/big.bin"), P("/copy.bin"))
    assert copied.size == len(payload)
    assert await store.read_all(P("/copy.bin")) == payload


# -- write ------------------------------------------------------------------------------------------


async def test_overwrite_replaces_content(store: LocalStore, root: Path) -> None:
    await store.write(P("/a"), b"first version, long")
    await store.write(P("/a"), b"second")
    assert (root / "a").read_bytes() == b"second"


async def test_empty_write(store: LocalStore, root: Path) -> None:
    info = await store.write(P("/empty"), b"")
    assert info.size == 0
    assert (root / "empty").read_bytes() == b""


async def test_write_needs_an_existing_parent(store: LocalStore, root: Path) -> None:
    with pytest.raises(NotFoundError, match="parent directory /no/dir does not exist"):
        await store.write(P("/no/dir/a.txt"), b"x")
    assert os.listdir(root) == []


async def test_write_onto_a_directory(store: LocalStore, root: Path) -> None:
    (root / "d").mkdir()
    for mode in WriteMode:
        with pytest.raises((IsADirectoryError_, AlreadyExistsError)):
            await store.write(P("/d"), b"x", mode=mode)
    with pytest.raises(IsADirectoryError_):
        await store.write(VPath.ROOT, b"x")
    assert (root / "d").is_dir()
    assert _temps(root) == []


async def test_create_refuses_an_existing_file(store: LocalStore, root: Path) -> None:
    await store.write(P("/a"), b"original", mode=WriteMode.CREATE)
    with pytest.raises(AlreadyExistsError, match="/a already exists"):
        await store.write(P("/a"), b"other", mode=WriteMode.CREATE)
    assert (root / "a").read_bytes() == b"original"
    assert _temps(root) == []


async def test_create_loses_a_race_with_another_creator(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone else creates the file after the existence check: the exclusive link still fails.
    real_link = os.link

    def racing_link(*args: object, **kwargs: object) -> None:
        (root / "a").write_bytes(b"theirs")
        real_link(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(AlreadyExistsError):
        await store.write(P("/a"), b"mine", mode=WriteMode.CREATE)
    assert (root / "a").read_bytes() == b"theirs"
    assert _temps(root) == []


@pytest.mark.parametrize("renameat2", [True, False])
async def test_create_without_hard_links(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    if not renameat2:
        monkeypatch.setattr(local, "_renameat2", None)
    await store.write(P("/a"), b"one", mode=WriteMode.CREATE)
    assert (root / "a").read_bytes() == b"one"
    with pytest.raises(AlreadyExistsError):
        await store.write(P("/a"), b"two", mode=WriteMode.CREATE)
    assert (root / "a").read_bytes() == b"one"
    assert _temps(root) == []


async def test_append(store: LocalStore, root: Path) -> None:
    await store.write(P("/log"), b"one\n", mode=WriteMode.APPEND)  # creates
    await store.write(P("/log"), b"two\n", mode=WriteMode.APPEND)
    info = await store.write(P("/log"), b"three\n", mode=WriteMode.APPEND)
    assert (root / "log").read_bytes() == b"one\ntwo\nthree\n"
    assert info.size == len(b"one\ntwo\nthree\n")


async def test_overwrite_and_append_keep_the_file_mode(store: LocalStore, root: Path) -> None:
    (root / "secret").write_bytes(b"s")
    (root / "secret").chmod(0o640)
    await store.write(P("/secret"), b"t")
    assert stat.S_IMODE((root / "secret").stat().st_mode) == 0o640
    await store.write(P("/secret"), b"u", mode=WriteMode.APPEND)
    assert stat.S_IMODE((root / "secret").stat().st_mode) == 0o640
    assert (root / "secret").read_bytes() == b"tu"


async def test_temporary_file_of_an_overwrite_is_private(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "secret").write_bytes(b"old")
    (root / "secret").chmod(0o600)
    seen: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            seen.append(stat.S_IMODE(mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    await store.write(P("/secret"), b"new secret")
    assert seen == [0o600]


async def test_versions_change_on_every_write(store: LocalStore) -> None:
    versions = set()
    for _ in range(200):  # same size, same content, as fast as possible
        info = await store.write(P("/a"), b"same")
        versions.add(info.version)
        assert (await store.stat(P("/a"))).version == info.version
    assert len(versions) == 200
    appended = await store.write(P("/a"), b"!", mode=WriteMode.APPEND)
    assert appended.version not in versions


async def test_if_version(store: LocalStore, root: Path) -> None:
    v1 = (await store.write(P("/a"), b"one")).version
    assert v1 is not None
    v2 = (await store.write(P("/a"), b"two", if_version=v1)).version
    with pytest.raises(ConflictError, match="read it again"):
        await store.write(P("/a"), b"stale", if_version=v1)
    with pytest.raises(ConflictError):
        await store.write(P("/a"), b"stale", mode=WriteMode.APPEND, if_version=v1)
    assert (root / "a").read_bytes() == b"two"
    assert v2 is not None
    await store.write(P("/a"), b"+", mode=WriteMode.APPEND, if_version=v2)
    assert (root / "a").read_bytes() == b"two+"
    with pytest.raises(ConflictError):
        await store.write(P("/missing"), b"x", if_version=v1)
    assert not (root / "missing").exists()
    assert _temps(root) == []


async def test_if_version_sees_outside_edits(store: LocalStore, root: Path) -> None:
    v1 = (await store.write(P("/a"), b"one")).version
    (root / "a").write_bytes(b"edited by hand, longer")
    with pytest.raises(ConflictError):
        await store.write(P("/a"), b"mine", if_version=v1)
    assert (root / "a").read_bytes() == b"edited by hand, longer"


def test_conditional_writers_in_threads_one_wins(store: LocalStore, root: Path) -> None:
    async def seed() -> str | None:
        return (await store.write(P("/counter"), b"0")).version

    version = asyncio.run(seed())
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        barrier.wait()
        try:
            asyncio.run(store.write(P("/counter"), str(i).encode(), if_version=version))
            outcomes.append("won")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["won"]
    assert _temps(root) == []


def test_readers_never_see_a_mix(store: LocalStore) -> None:
    size = 256 * 1024
    contents = (b"A" * size, b"B" * size)
    asyncio.run(store.write(P("/f"), contents[0]))
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            asyncio.run(store.write(P("/f"), contents[i % 2]))

    thread = threading.Thread(target=writer)
    thread.start()
    seen: set[bytes] = set()
    deadline = time.monotonic() + 20
    try:
        while len(seen) < 2 and time.monotonic() < deadline:
            data = asyncio.run(store.read_all(P("/f")))
            assert data in contents  # all A or all B: never a torn file
            seen.add(data[:1])
    finally:
        stop.set()
        thread.join()
    assert seen == {b"A", b"B"}  # the reads really did overlap the writes


async def test_failed_write_leaves_nothing_behind(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "a").write_bytes(b"original")

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    for mode in (WriteMode.OVERWRITE, WriteMode.APPEND):
        with pytest.raises(StoreError, match=r"/a: local disk error \(Input/output error\)"):
            await store.write(P("/a"), b"new", mode=mode)
    with pytest.raises(StoreError):
        await store.write(P("/b"), b"new", mode=WriteMode.CREATE)
    assert sorted(os.listdir(root)) == ["a"]
    assert (root / "a").read_bytes() == b"original"


async def test_failed_rename_leaves_nothing_behind(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_rename(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(StoreError, match="no space left on the disk of this mount; free space"):
        await store.write(P("/a"), b"new")
    assert os.listdir(root) == []


# -- temporary files ------------------------------------------------------------------------------


async def test_temporary_files_are_never_listed(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / f"{TEMP_PREFIX}0123abcd").write_bytes(b"left by a crash")
    listings: list[list[str]] = []
    on_disk: list[list[str]] = []
    real_rename = os.rename

    def spy(*args: object, **kwargs: object) -> None:
        on_disk.append(_temps(root))
        listings.append([i.path.name for i in _drive(store.list(VPath.ROOT))])
        real_rename(*args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(os, "rename", spy)
        await store.write(P("/a"), b"data")
    assert len(on_disk[0]) == 2  # the leftover and the in-flight temporary file
    assert listings == [[]]
    assert [i.path.name for i in await store.list(VPath.ROOT)] == ["a"]
    assert len(_temps(root)) == 1  # only the leftover


async def test_temporary_names_are_reserved(store: LocalStore, root: Path) -> None:
    name = f"/{TEMP_PREFIX}cafe"
    (root / name[1:]).write_bytes(b"x")
    for call in (
        lambda: store.stat(P(name)),
        lambda: store.read_all(P(name)),
        lambda: store.write(P(name), b"y"),
        lambda: store.delete(P(name)),
        lambda: store.mkdir(P(f"/{TEMP_PREFIX}dir")),
    ):
        with pytest.raises(InvalidPathError, match="reserved"):
            await call()
    assert (root / name[1:]).read_bytes() == b"x"


# -- list, mkdir, delete --------------------------------------------------------------------------


async def test_list(store: LocalStore, root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "x.txt").write_bytes(b"xx")
    (root / "d" / "sub").mkdir()
    (root / "d" / ".hidden").write_bytes(b"")
    infos = {i.path: i for i in await store.list(P("/d"))}
    assert set(infos) == {P("/d/x.txt"), P("/d/sub"), P("/d/.hidden")}
    assert infos[P("/d/x.txt")].is_file
    assert infos[P("/d/x.txt")].size == 2
    assert infos[P("/d/x.txt")].version == (await store.stat(P("/d/x.txt"))).version
    assert infos[P("/d/sub")].is_dir
    assert await store.list(P("/d/sub")) == []


async def test_list_skips_names_a_path_cannot_reach(store: LocalStore, root: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café.txt")
    for name in ("ok.txt", "back\\slash", "ctl\x07name", decomposed):
        (root / name).write_bytes(b"x")
    fd = os.open(bytes(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open(b"bad\xff", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    assert [i.path for i in await store.list(VPath.ROOT)] == [P("/ok.txt")]


async def test_mkdir(store: LocalStore, root: Path) -> None:
    await store.mkdir(P("/d"))
    assert (root / "d").is_dir()
    with pytest.raises(AlreadyExistsError):
        await store.mkdir(P("/d"))
    with pytest.raises(AlreadyExistsError):
        await store.mkdir(VPath.ROOT)
    with pytest.raises(NotFoundError, match="parent directory /x does not exist"):
        await store.mkdir(P("/x/y"))
    await store.makedirs(P("/d/e/f"))
    assert (root / "d" / "e" / "f").is_dir()


async def test_delete_file_and_empty_directory(store: LocalStore, root: Path) -> None:
    (root / "f").write_bytes(b"x")
    (root / "d").mkdir()
    await store.delete(P("/f"))
    await store.delete(P("/d"))
    assert os.listdir(root) == []
    with pytest.raises(IsADirectoryError_, match="store root"):
        await store.delete(VPath.ROOT)
    with pytest.raises(IsADirectoryError_):
        await store.delete(VPath.ROOT, recursive=True)
    assert root.is_dir()


async def test_delete_non_empty_directory(store: LocalStore, root: Path) -> None:
    (root / "d" / "e" / "f").mkdir(parents=True)
    (root / "d" / "e" / "f" / "deep.txt").write_bytes(b"x")
    (root / "d" / "top.txt").write_bytes(b"x")
    (root / "d" / f"{TEMP_PREFIX}stale").write_bytes(b"x")
    with pytest.raises(DirectoryNotEmptyError, match="recursive=True"):
        await store.delete(P("/d"))
    assert (root / "d" / "e" / "f" / "deep.txt").exists()
    await store.delete(P("/d"), recursive=True)
    assert os.listdir(root) == []


async def test_recursive_delete_of_a_deep_tree(store: LocalStore, root: Path) -> None:
    here = root / "t"
    for i in range(60):
        here = here / f"level{i}"
    here.mkdir(parents=True)
    (here / "leaf").write_bytes(b"x")
    for i in range(20):
        (root / "t" / f"f{i}").write_bytes(b"x")
    await store.delete(P("/t"), recursive=True)
    assert os.listdir(root) == []


# -- rename -----------------------------------------------------------------------------------------


async def test_rename_file_and_directory(store: LocalStore, root: Path) -> None:
    (root / "a").write_bytes(b"A")
    (root / "d").mkdir()
    (root / "d" / "in").write_bytes(b"I")
    (root / "e").mkdir()
    await store.rename(P("/a"), P("/e/b"))
    await store.rename(P("/d"), P("/e/d2"))
    assert (root / "e" / "b").read_bytes() == b"A"
    assert (root / "e" / "d2" / "in").read_bytes() == b"I"
    assert sorted(os.listdir(root)) == ["e"]


@pytest.mark.parametrize("renameat2", [True, False])
async def test_rename_never_overwrites(
    store: LocalStore, root: Path, monkeypatch: pytest.MonkeyPatch, renameat2: bool
) -> None:
    if not renameat2:
        monkeypatch.setattr(local, "_renameat2", None)
    (root / "a").write_bytes(b"A")
    (root / "b").write_bytes(b"B")
    (root / "d").mkdir()
    (root / "empty").mkdir()
    for src, dst in (("/a", "/b"), ("/a", "/d"), ("/d", "/b"), ("/d", "/empty")):
        with pytest.raises(AlreadyExistsError, match=f"{dst} already exists"):
            await store.rename(P(src), P(dst))
    assert (root / "a").read_bytes() == b"A"
    assert (root / "b").read_bytes() == b"B"
    assert (root / "d").is_dir()
    await store.rename(P("/a"), P("/c"))
    assert (root / "c").read_bytes() == b"A"


async def test_rename_errors(store: LocalStore, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(NotADirectoryError_, match="into itself"):
        await store.rename(P("/d"), P("/d/inner"))
    with pytest.raises(NotADirectoryError_, match="into itself"):
        await store.rename(P("/d"), P("/d"))
    with pytest.raises(NotFoundError):
        await store.rename(P("/missing"), P("/x"))
    with pytest.raises(NotFoundError, match="parent directory"):
        await store.rename(P("/d"), P("/no/x"))
    with pytest.raises(IsADirectoryError_):
        await store.rename(VPath.ROOT, P("/x"))
    assert os.listdir(root) == ["d"]


# -- hygiene ----------------------------------------------------------------------------------------


async def test_no_descriptor_leaks(store: LocalStore, root: Path) -> None:
    (root / "file").write_bytes(b"x")
    (root / "link").symlink_to("file")
    os.mkfifo(root / "fifo")

    async def round_trip(i: int) -> None:
        d = P(f"/d{i}")
        await store.mkdir(d)
        v = (await store.write(d / "a", b"data")).version
        await store.write(d / "a", b"more", mode=WriteMode.APPEND, if_version=v)
        await store.read_range(d / "a", 1, 2)
        await store.list(d)
        await store.stat(d / "a")
        await store.rename(d / "a", d / "b")
        await store.write(d / "c", b"c", mode=WriteMode.CREATE)
        failing = (
            lambda: store.read_all(P("/missing")),
            lambda: store.read_all(P("/link")),
            lambda: store.read_all(P("/fifo")),
            lambda: store.read_all(P("/file/x")),
            lambda: store.read_all(d),
            lambda: store.write(d / "c", b"c", mode=WriteMode.CREATE),
            lambda: store.write(d / "b", b"x", if_version="stale"),
            lambda: store.write(P("/link"), b"x"),
            lambda: store.write(P("/link/x"), b"x"),
            lambda: store.list(P("/link")),
            lambda: store.delete(d),
            lambda: store.rename(d / "b", d / "c"),
            lambda: store.mkdir(d),
            lambda: store.stat(P("/missing")),
            lambda: store.stat(P("/link")),
            lambda: store.stat(P("/missing/deeper")),
            lambda: store.list(P("/missing")),
            lambda: store.list(P("/file")),
            lambda: store.delete(P("/missing")),
            lambda: store.delete(P("/link")),
            lambda: store.mkdir(P("/missing/x")),
            lambda: store.rename(P("/missing"), P("/x")),
            lambda: store.rename(P("/link"), P("/x")),
            lambda: store.write(P("/missing/x"), b"x"),
            lambda: store.write(P("/fifo"), b"x", mode=WriteMode.APPEND),
            lambda: store.write(d, b"x"),
            lambda: store.read_range(VPath(("..", "x")), 0, 1),
        )
        for call in failing:
            with pytest.raises(OperationError):
                await call()
        await store.delete(d, recursive=True)

    await round_trip(-1)  # warm up anything cached on first use
    before = _open_fds()
    for i in range(40):
        await round_trip(i)
    assert _open_fds() - before == set()


async def test_error_messages_never_name_the_host_root(store: LocalStore, root: Path) -> None:
    (root / "file").write_bytes(b"x")
    (root / "link").symlink_to("/etc/passwd")
    messages = []
    for call in (
        lambda: store.read_all(P("/missing")),
        lambda: store.read_all(P("/link")),
        lambda: store.read_all(P("/file/x")),
        lambda: store.write(P("/no/x"), b""),
        lambda: store.write(P("/file"), b"", mode=WriteMode.CREATE),
        lambda: store.delete(P("/link")),
        lambda: store.mkdir(P("/file")),
    ):
        with pytest.raises(OperationError) as caught:
            await call()
        messages.append(str(caught.value))
    assert len(messages) == 7
    for message in messages:
        assert str(root) not in message
        assert "\n" not in message
        assert message.startswith("/") or message.startswith("parent directory /")


def test_concurrent_listings_of_the_root_are_complete(store: LocalStore, root: Path) -> None:
    for i in range(300):
        (root / f"f{i:03}").write_bytes(b"")
    counts: list[int] = []
    barrier = threading.Barrier(8)

    def lister() -> None:
        barrier.wait()
        for _ in range(30):
            counts.append(len(asyncio.run(store.list(VPath.ROOT))))

    threads = [threading.Thread(target=lister) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == [300] * 240
