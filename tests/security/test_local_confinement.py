"""LocalStore confinement under attack: links, special files, swaps between check and use.

Layout of every test: ``tmp/root`` is the store's root; ``tmp/outside`` holds what an attacker
wants (``secret.txt`` and ``inner.txt`` containing ``SECRET``). Nothing from ``outside`` may ever
be read, written, created, listed or deleted through the store.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    InvalidPathError,
    IsADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
    UnsupportedFileError,
)
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.stores._cached import CachedReads
from bastion.stores.local import TEMP_PREFIX, LocalStore

P = VPath.parse
T = TypeVar("T")
SECRET = b"SECRET"
LINK_REFUSED = "is a symbolic link; Bastion does not follow links"


@dataclass
class Layout:
    root: Path
    outside: Path
    store: LocalStore

    def snapshot(self) -> dict[str, tuple[str, bytes]]:
        """Everything under ``outside``: type and content (files) or target (links)."""
        seen: dict[str, tuple[str, bytes]] = {}
        for dirpath, dirnames, filenames in os.walk(self.outside, followlinks=False):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                rel = str(path.relative_to(self.outside))
                mode = path.lstat().st_mode
                if stat.S_ISLNK(mode):
                    seen[rel] = ("link", os.readlink(path).encode())
                elif stat.S_ISREG(mode):
                    seen[rel] = ("file", path.read_bytes())
                else:
                    seen[rel] = ("dir", b"")
        return seen

    def temps(self) -> list[str]:
        return [
            name
            for _, dirnames, filenames in os.walk(self.root)
            for name in dirnames + filenames
            if name.startswith(TEMP_PREFIX)
        ]


def _open_fds() -> set[int]:
    gc.collect()  # let stores other tests dropped release their descriptors first
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@pytest.fixture
def lay(tmp_path: Path) -> Iterator[Layout]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "inner.txt").write_bytes(SECRET)
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_bytes(b"INSIDE")
    (root / "sub").mkdir()
    (root / "sub" / "inner.txt").write_bytes(b"INNER")
    before = _open_fds()
    store = LocalStore(root)
    yield Layout(root, outside, store)
    store.close()
    assert _open_fds() - before == set(), "the test leaked file descriptors"


def _drive(coro: Coroutine[object, object, T]) -> T:
    """Run a store coroutine to completion from synchronous code (a thread with no loop)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


def _within(seconds: float, call: Callable[[], T], unblock: Callable[[], None]) -> T:
    """Run ``call`` in a thread; fail (after running ``unblock``) if it has not returned."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(5)
        pytest.fail(f"the call blocked for more than {seconds}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _make_device(path: Path, kind: int, major: int, minor: int) -> None:
    try:
        os.mknod(path, kind | 0o600, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("creating device nodes is not permitted here")


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (renameat2 RENAME_EXCHANGE)."""
    rc = _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE)
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _need_exchange(tmp_path: Path) -> None:
    (tmp_path / "x1").write_bytes(b"")
    (tmp_path / "x2").write_bytes(b"")
    try:
        _exchange(tmp_path / "x1", tmp_path / "x2")
    except (AttributeError, OSError):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available")


# -- symbolic links of every kind ------------------------------------------------------------------


def _file_abs(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to(outside / "secret.txt")


def _file_rel(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("../outside/secret.txt")


def _dir_abs(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to(outside, target_is_directory=True)


def _dir_rel(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("..", target_is_directory=True)


def _chain(root: Path, outside: Path) -> None:
    (root / "hop").symlink_to(outside / "hop2")
    (outside / "hop2").symlink_to(outside)
    (root / "evil").symlink_to("hop")


def _dangling(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to(outside / "missing.txt")


def _loop(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("evil2")
    (root / "evil2").symlink_to("evil")


def _self_loop(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("evil")


def _inside_file(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("inside.txt")


def _inside_dir(root: Path, outside: Path) -> None:
    (root / "evil").symlink_to("sub", target_is_directory=True)


LINKS = {
    "file-absolute": _file_abs,
    "file-relative": _file_rel,
    "dir-absolute": _dir_abs,
    "dir-dotdot": _dir_rel,
    "chain": _chain,
    "dangling": _dangling,
    "loop": _loop,
    "self-loop": _self_loop,
    "inside-to-file": _inside_file,
    "inside-to-dir": _inside_dir,
}


@pytest.fixture(params=sorted(LINKS))
def evil(request: pytest.FixtureRequest, lay: Layout) -> Layout:
    """``root/evil`` is a symbolic link of the kind named by the parameter."""
    LINKS[request.param](lay.root, lay.outside)
    return lay


async def test_link_target_is_refused(evil: Layout) -> None:
    store = evil.store
    before = evil.snapshot()
    target = os.readlink(evil.root / "evil")
    for call in (
        lambda: store.stat(P("/evil")),
        lambda: store.read_all(P("/evil")),
        lambda: store.read_range(P("/evil"), 0, 3),
        lambda: store.read_file(P("/evil")),
        lambda: store.list(P("/evil")),
        lambda: store.delete(P("/evil")),
        lambda: store.delete(P("/evil"), recursive=True),
        lambda: store.rename(P("/evil"), P("/moved")),
        lambda: store.exists(P("/evil")),
    ):
        with pytest.raises(UnsupportedFileError, match=LINK_REFUSED) as caught:
            await call()
        assert str(caught.value).startswith("/evil ")
    assert os.readlink(evil.root / "evil") == target
    assert not (evil.root / "moved").exists()
    assert evil.snapshot() == before


async def test_link_as_a_path_component_is_refused(evil: Layout) -> None:
    store = evil.store
    before = evil.snapshot()
    for call in (
        lambda: store.stat(P("/evil/secret.txt")),
        lambda: store.read_all(P("/evil/secret.txt")),
        lambda: store.read_all(P("/evil/inner.txt")),
        lambda: store.read_file(P("/evil/secret.txt")),
        lambda: store.read_file(P("/evil/inner.txt"), 0, 3),
        lambda: store.list(P("/evil/x")),
        lambda: store.write(P("/evil/new.txt"), b"planted"),
        lambda: store.write(P("/evil/secret.txt"), b"overwritten"),
        lambda: store.mkdir(P("/evil/newdir")),
        lambda: store.makedirs(P("/evil/a/b")),
        lambda: store.delete(P("/evil/secret.txt")),
        lambda: store.delete(P("/evil/inner.txt"), recursive=True),
        lambda: store.rename(P("/inside.txt"), P("/evil/stolen.txt")),
        lambda: store.rename(P("/evil/secret.txt"), P("/stolen.txt")),
    ):
        with pytest.raises(UnsupportedFileError, match=LINK_REFUSED) as caught:
            await call()
        assert str(caught.value).startswith("/evil ")
    assert evil.snapshot() == before
    assert (evil.root / "inside.txt").read_bytes() == b"INSIDE"
    assert (evil.root / "sub" / "inner.txt").read_bytes() == b"INNER"
    assert not (evil.root / "stolen.txt").exists()


async def test_link_deeper_in_the_tree_is_refused(lay: Layout) -> None:
    (lay.root / "sub" / "deeper").symlink_to(lay.outside)
    with pytest.raises(UnsupportedFileError, match=f"/sub/deeper {LINK_REFUSED}"):
        await lay.store.read_all(P("/sub/deeper/secret.txt"))
    with pytest.raises(UnsupportedFileError, match=f"/sub/deeper {LINK_REFUSED}"):
        await lay.store.read_file(P("/sub/deeper/secret.txt"))
    with pytest.raises(UnsupportedFileError):
        await lay.store.write(P("/sub/deeper/planted"), b"x")
    assert not (lay.outside / "planted").exists()


async def test_links_are_not_listed(evil: Layout) -> None:
    names = {info.path.name for info in await evil.store.list(VPath.ROOT)}
    assert names == {"inside.txt", "sub"}
    walked = [str(info.path) async for info in evil.store.walk()]
    assert sorted(walked) == ["/inside.txt", "/sub", "/sub/inner.txt"]


@pytest.mark.parametrize("mode", list(WriteMode))
async def test_write_through_a_link_is_refused(evil: Layout, mode: WriteMode) -> None:
    before = evil.snapshot()
    target = os.readlink(evil.root / "evil")
    with pytest.raises(UnsupportedFileError, match=LINK_REFUSED):
        await evil.store.write(P("/evil"), b"planted", mode=mode)
    assert evil.snapshot() == before
    assert os.readlink(evil.root / "evil") == target
    assert (evil.root / "inside.txt").read_bytes() == b"INSIDE"
    assert evil.temps() == []


async def test_nothing_is_created_or_moved_onto_a_link(evil: Layout) -> None:
    before = evil.snapshot()
    with pytest.raises(AlreadyExistsError):
        await evil.store.mkdir(P("/evil"))
    with pytest.raises(AlreadyExistsError):
        await evil.store.rename(P("/inside.txt"), P("/evil"))
    with pytest.raises(AlreadyExistsError):
        await evil.store.rename(P("/sub"), P("/evil"))
    with pytest.raises(UnsupportedFileError):
        await evil.store.copy_file(P("/inside.txt"), P("/evil"), overwrite=True)
    assert evil.snapshot() == before
    assert (evil.root / "evil").is_symlink()
    assert (evil.root / "inside.txt").read_bytes() == b"INSIDE"


async def test_exclusive_create_onto_a_dangling_link(lay: Layout) -> None:
    (lay.root / "evil").symlink_to(lay.outside / "created-by-attack")
    with pytest.raises(UnsupportedFileError):
        await lay.store.write(P("/evil"), b"x", mode=WriteMode.CREATE)
    assert not (lay.outside / "created-by-attack").exists()
    assert (lay.root / "evil").is_symlink()


async def test_recursive_delete_removes_links_not_their_targets(lay: Layout) -> None:
    tree = lay.root / "tree"
    (tree / "nested").mkdir(parents=True)
    (tree / "to-dir").symlink_to(lay.outside, target_is_directory=True)
    (tree / "nested" / "to-file").symlink_to(lay.outside / "secret.txt")
    (tree / "nested" / "dangling").symlink_to(lay.outside / "nothing")
    os.mkfifo(tree / "nested" / "fifo")
    before = lay.snapshot()
    await lay.store.delete(P("/tree"), recursive=True)
    assert not tree.exists()
    assert lay.snapshot() == before


# -- defence in depth: paths built without VPath.parse ----------------------------------------------


@pytest.mark.parametrize(
    "parts",
    [("..", "outside", "secret.txt"), ("sub", "..", "..", "outside"), ("a/b",), ("",), (".",)],
)
async def test_forged_vpaths_are_refused(lay: Layout, parts: tuple[str, ...]) -> None:
    forged = VPath(parts)
    for call in (
        lambda: lay.store.read_all(forged),
        lambda: lay.store.read_file(forged),
        lambda: lay.store.stat(forged),
        lambda: lay.store.write(forged, b"x"),
        lambda: lay.store.list(forged),
    ):
        with pytest.raises(InvalidPathError, match="invalid name"):
            await call()
    assert (lay.outside / "secret.txt").read_bytes() == SECRET


async def test_nul_in_a_forged_vpath_is_refused(lay: Layout) -> None:
    with pytest.raises(InvalidPathError):
        await lay.store.read_all(VPath(("inside.txt\0",)))


async def test_store_stays_on_its_directory_when_the_root_path_moves(lay: Layout) -> None:
    lay.root.rename(lay.root.with_name("moved"))
    lay.root.symlink_to(lay.outside, target_is_directory=True)  # the old path now points away
    assert await lay.store.read_all(P("/inside.txt")) == b"INSIDE"
    with pytest.raises(NotFoundError):
        await lay.store.read_all(P("/secret.txt"))


# -- special files -----------------------------------------------------------------------------------


async def test_fifo_is_refused_without_blocking(lay: Layout) -> None:
    fifo = lay.root / "pipe"
    os.mkfifo(fifo)
    unblock = _fifo_writer(fifo)
    for call in (
        lambda: _drive(lay.store.read_all(P("/pipe"))),
        lambda: _drive(lay.store.read_file(P("/pipe"))),
        lambda: _drive(lay.store.stat(P("/pipe"))),
        lambda: _drive(lay.store.write(P("/pipe"), b"x")),
        lambda: _drive(lay.store.write(P("/pipe"), b"x", mode=WriteMode.APPEND)),
        lambda: _drive(lay.store.read_all(P("/pipe/x"))),
    ):
        with pytest.raises(UnsupportedFileError, match="/pipe is a FIFO"):
            _within(5, call, unblock)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert {i.path.name for i in await lay.store.list(VPath.ROOT)} == {"inside.txt", "sub"}


async def test_unix_socket_is_refused(lay: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(lay.root)  # keep the socket path short
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind("sock")
        for call in (
            lambda: lay.store.read_all(P("/sock")),
            lambda: lay.store.read_file(P("/sock")),
            lambda: lay.store.stat(P("/sock")),
            lambda: lay.store.write(P("/sock"), b"x"),
            lambda: lay.store.delete(P("/sock")),
        ):
            with pytest.raises(UnsupportedFileError, match="/sock is a socket"):
                await call()
        assert "sock" not in {i.path.name for i in await lay.store.list(VPath.ROOT)}
        assert stat.S_ISSOCK((lay.root / "sock").lstat().st_mode)


@pytest.mark.parametrize(
    ("kind", "major", "minor"),
    [(stat.S_IFCHR, 1, 5), (stat.S_IFCHR, 1, 3), (stat.S_IFBLK, 7, 0)],
    ids=["char-zero", "char-null", "block-loop"],
)
async def test_device_is_refused(lay: Layout, kind: int, major: int, minor: int) -> None:
    _make_device(lay.root / "dev", kind, major, minor)
    for call in (
        lambda: _drive(lay.store.read_all(P("/dev"))),  # /dev/zero would never end
        lambda: _drive(lay.store.read_file(P("/dev"))),
        lambda: _drive(lay.store.stat(P("/dev"))),
        lambda: _drive(lay.store.write(P("/dev"), b"x")),
    ):
        with pytest.raises(UnsupportedFileError, match="/dev is a device"):
            _within(5, call, lambda: None)
    assert "dev" not in {i.path.name for i in await lay.store.list(VPath.ROOT)}
    assert (lay.root / "dev").lstat().st_mode & kind == kind


# -- hard links (decision: served; writes never reach the shared inode) -------------------------------


async def test_hard_link_to_an_outside_file_is_served_but_never_written_through(
    lay: Layout,
) -> None:
    os.link(lay.outside / "secret.txt", lay.root / "hard")
    assert (lay.root / "hard").stat().st_nlink == 2
    # Indistinguishable from a regular file: documented decision, it is served.
    assert await lay.store.read_all(P("/hard")) == SECRET
    await lay.store.write(P("/hard"), b"replaced")
    await lay.store.write(P("/hard"), b"+more", mode=WriteMode.APPEND)
    assert (lay.outside / "secret.txt").read_bytes() == SECRET
    assert (lay.outside / "secret.txt").stat().st_nlink == 1
    assert (lay.root / "hard").read_bytes() == b"replaced+more"
    await lay.store.delete(P("/hard"))
    assert (lay.outside / "secret.txt").read_bytes() == SECRET


# -- swaps between the check and the use (deterministic) ---------------------------------------------


def _walk_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CachedReads, "stat", lambda self, relative: None)
    monkeypatch.setattr(CachedReads, "open", lambda self, relative: None)


def _hook(
    monkeypatch: pytest.MonkeyPatch,
    func_name: str,
    when: Callable[[str], bool],
    swap: Callable[[], None],
) -> list[str]:
    """Wrap ``os.<func_name>`` so that ``swap`` runs once, just before the first call whose
    first argument satisfies ``when``. Returns the list of names it fired on. The reads
    answered from memory (``_cached``) are turned off: these swaps race the walk."""
    _walk_only(monkeypatch)
    real = getattr(os, func_name)
    fired: list[str] = []

    def hooked(first: object, *args: object, **kwargs: object) -> object:
        if not fired and isinstance(first, str) and when(first):
            fired.append(first)
            swap()
        return real(first, *args, **kwargs)

    monkeypatch.setattr(os, func_name, hooked)
    return fired


def _to_link(entry: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        if entry.is_dir() and not entry.is_symlink():
            entry.rename(entry.with_name(entry.name + ".moved"))
        else:
            entry.unlink()
        entry.symlink_to(target)

    return swap


def _to_fifo(entry: Path) -> Callable[[], None]:
    def swap() -> None:
        entry.unlink()
        os.mkfifo(entry)

    return swap


def _fifo_writer(fifo: Path) -> Callable[[], None]:
    """Opens ``fifo`` for writing once: unblocks a reader stuck opening it."""

    def unblock() -> None:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    return unblock


async def test_file_swapped_for_a_link_before_open(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    swap = _to_link(lay.root / "inside.txt", lay.outside / "secret.txt")
    fired = _hook(monkeypatch, "open", lambda name: name == "inside.txt", swap)
    with pytest.raises(UnsupportedFileError, match=LINK_REFUSED):
        await lay.store.read_all(P("/inside.txt"))
    assert fired == ["inside.txt"]  # the swap happened after the check, before the open


async def test_file_swapped_for_a_fifo_before_open(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = lay.root / "inside.txt"
    fired = _hook(monkeypatch, "open", lambda name: name == "inside.txt", _to_fifo(target))
    with pytest.raises(UnsupportedFileError, match="is a FIFO"):
        _within(5, lambda: _drive(lay.store.read_all(P("/inside.txt"))), _fifo_writer(target))
    assert fired == ["inside.txt"]


async def test_file_swapped_for_a_device_before_open(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = lay.root / "inside.txt"
    _make_device(lay.root / "probe", stat.S_IFCHR, 1, 5)  # skips early when not permitted

    def swap() -> None:
        target.unlink()
        (lay.root / "probe").rename(target)

    fired = _hook(monkeypatch, "open", lambda name: name == "inside.txt", swap)
    with pytest.raises(UnsupportedFileError, match="is a device"):
        _within(5, lambda: _drive(lay.store.read_all(P("/inside.txt"))), lambda: None)
    assert fired == ["inside.txt"]


async def test_file_swapped_for_a_directory_before_open(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = lay.root / "inside.txt"

    def swap() -> None:
        target.unlink()
        target.mkdir()

    fired = _hook(monkeypatch, "open", lambda name: name == "inside.txt", swap)
    with pytest.raises(IsADirectoryError_):
        await lay.store.read_all(P("/inside.txt"))
    assert fired == ["inside.txt"]


async def test_parent_swapped_for_a_link_before_it_is_opened(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    fired = _hook(
        monkeypatch, "open", lambda name: name == "sub", _to_link(lay.root / "sub", lay.outside)
    )
    with pytest.raises(UnsupportedFileError, match=f"/sub {LINK_REFUSED}"):
        await lay.store.read_all(P("/sub/inner.txt"))
    assert fired == ["sub"]


async def test_parent_swapped_for_a_link_after_it_is_opened(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The parent is held by descriptor: the read follows the directory, not the name.
    swap = _to_link(lay.root / "sub", lay.outside)
    fired = _hook(monkeypatch, "open", lambda name: name == "inner.txt", swap)
    assert await lay.store.read_all(P("/sub/inner.txt")) == b"INNER"
    assert fired == ["inner.txt"]
    assert (lay.root / "sub").is_symlink()  # the swap really happened


# -- read_file's one-lookup open (openat2): swaps after its first look ------------------------------


def _after(
    monkeypatch: pytest.MonkeyPatch,
    func_name: str,
    when: Callable[[str], bool],
    swap: Callable[[], None],
) -> list[str]:
    """Like :func:`_hook`, but ``swap`` runs just *after* the first matching call returns:
    the store has looked, and the entry changes before it acts on what it saw."""
    _walk_only(monkeypatch)
    real = getattr(os, func_name)
    fired: list[str] = []

    def hooked(first: object, *args: object, **kwargs: object) -> object:
        result = real(first, *args, **kwargs)
        if not fired and isinstance(first, str) and when(first):
            fired.append(first)
            swap()
        return result

    monkeypatch.setattr(os, func_name, hooked)
    return fired


def _need_openat2(store: LocalStore) -> None:
    if store._openat2 is None:
        pytest.skip("openat2 is not available here: read_file walks like read_range")


async def test_read_file_opens_in_one_lookup(lay: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    _need_openat2(lay.store)
    opened = _hook(monkeypatch, "open", lambda name: True, lambda: None)
    info, data = await lay.store.read_file(P("/sub/inner.txt"))
    assert data == b"INNER" and info.size == 5
    assert opened == []  # no descriptor walk: the kernel resolved the path beneath the root


@pytest.mark.parametrize("target", ["/inside.txt", "/sub/inner.txt"])
async def test_file_swapped_for_a_link_after_the_first_look(
    lay: Layout, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    _need_openat2(lay.store)
    relative = target.lstrip("/")
    entry = lay.root / relative
    secret = lay.outside / "secret.txt"
    fired = _after(monkeypatch, "stat", lambda name: name == relative, _to_link(entry, secret))
    with pytest.raises(UnsupportedFileError, match=f"{target} {LINK_REFUSED}"):
        await lay.store.read_file(P(target))
    assert fired == [relative]
    assert entry.is_symlink()


async def test_parent_swapped_for_a_link_after_the_first_look(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_openat2(lay.store)
    swap = _to_link(lay.root / "sub", lay.outside)
    fired = _after(monkeypatch, "stat", lambda name: name == "sub/inner.txt", swap)
    with pytest.raises(UnsupportedFileError, match=f"/sub {LINK_REFUSED}"):
        await lay.store.read_file(P("/sub/inner.txt"))
    assert fired == ["sub/inner.txt"]
    assert (lay.root / "sub").is_symlink()  # the outside inner.txt (SECRET) was never read


async def test_file_swapped_for_a_fifo_after_the_first_look(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_openat2(lay.store)
    target = lay.root / "inside.txt"
    fired = _after(monkeypatch, "stat", lambda name: name == "inside.txt", _to_fifo(target))
    with pytest.raises(UnsupportedFileError, match="is a FIFO"):
        _within(5, lambda: _drive(lay.store.read_file(P("/inside.txt"))), _fifo_writer(target))
    assert fired == ["inside.txt"]


async def test_read_file_check_runs_on_the_opened_file(lay: Layout) -> None:
    """The info handed to ``check`` is the descriptor's: a refusal reads nothing."""
    seen: list[int] = []

    def refuse(info: object) -> None:
        seen.append(1)
        raise PermissionError("refused by the caller")

    with pytest.raises(PermissionError):
        await lay.store.read_file(P("/inside.txt"), check=refuse)
    assert seen == [1]


async def test_parent_swapped_during_a_write(lay: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    before = lay.snapshot()
    fired = _hook(
        monkeypatch, "open", lambda name: name == "sub", _to_link(lay.root / "sub", lay.outside)
    )
    with pytest.raises(UnsupportedFileError):
        await lay.store.write(P("/sub/inner.txt"), b"planted")
    with pytest.raises(UnsupportedFileError):
        await lay.store.mkdir(P("/sub/newdir"))
    assert fired == ["sub"]
    assert lay.snapshot() == before


async def test_append_source_swapped_for_a_link(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between the write's check and its opening of the old content, the target becomes a link
    # to the secret: nothing of the secret may be copied into the root.
    swap = _to_link(lay.root / "inside.txt", lay.outside / "secret.txt")
    fired = _hook(monkeypatch, "open", lambda name: name == "inside.txt", swap)
    with pytest.raises(UnsupportedFileError):
        await lay.store.write(P("/inside.txt"), b"+tail", mode=WriteMode.APPEND)
    assert fired == ["inside.txt"]
    assert (lay.outside / "secret.txt").read_bytes() == SECRET
    assert (lay.root / "inside.txt").is_symlink()
    assert lay.temps() == []


async def test_target_swapped_for_a_link_before_the_rename(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rename() replaces the link itself; it never writes through it.
    swap = _to_link(lay.root / "inside.txt", lay.outside / "secret.txt")
    fired = _hook(monkeypatch, "rename", lambda name: name.startswith(TEMP_PREFIX), swap)
    await lay.store.write(P("/inside.txt"), b"new content")
    assert fired
    assert (lay.outside / "secret.txt").read_bytes() == SECRET
    assert not (lay.root / "inside.txt").is_symlink()
    assert (lay.root / "inside.txt").read_bytes() == b"new content"


async def test_dangling_link_planted_before_exclusive_create(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap() -> None:
        (lay.root / "new.txt").symlink_to(lay.outside / "created-by-attack")

    fired = _hook(monkeypatch, "link", lambda name: name.startswith(TEMP_PREFIX), swap)
    with pytest.raises(AlreadyExistsError):
        await lay.store.write(P("/new.txt"), b"x", mode=WriteMode.CREATE)
    assert fired
    assert not (lay.outside / "created-by-attack").exists()
    assert (lay.root / "new.txt").is_symlink()
    assert lay.temps() == []


async def test_directory_swapped_for_a_link_during_recursive_delete(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    (lay.root / "tree" / "victim").mkdir(parents=True)
    (lay.root / "tree" / "victim" / "f").write_bytes(b"x")
    before = lay.snapshot()
    victim = lay.root / "tree" / "victim"

    def swap() -> None:
        (victim / "f").unlink()
        victim.rmdir()
        victim.symlink_to(lay.outside, target_is_directory=True)

    fired = _hook(monkeypatch, "open", lambda name: name == "victim", swap)
    await lay.store.delete(P("/tree"), recursive=True)
    assert fired == ["victim"]
    assert not (lay.root / "tree").exists()
    assert lay.snapshot() == before


# -- swaps by a racing thread -----------------------------------------------------------------------


def _race(flip: Callable[[], None], attempt: Callable[[], None], seconds: float = 1.5) -> int:
    """Call ``attempt`` repeatedly for ``seconds`` while another thread calls ``flip``."""
    stop = threading.Event()
    flips = 0

    def flipper() -> None:
        nonlocal flips
        while not stop.is_set():
            flip()
            flips += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            attempt()
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    return flips


def _read_outcome(store: LocalStore, path: VPath) -> bytes | str:
    try:
        return _drive(store.read_all(path))
    except UnsupportedFileError:
        return "refused"
    except StoreError as exc:
        assert "changed during the operation" in str(exc)
        return "changed"


def test_racing_file_and_link_swap_never_leaks(lay: Layout, tmp_path: Path) -> None:
    _need_exchange(tmp_path)
    (lay.root / "alt").symlink_to(lay.outside / "secret.txt")
    store_seen: dict[bytes | str, int] = {}
    naive_seen: dict[bytes, int] = {}

    def attempt() -> None:
        outcome = _read_outcome(lay.store, P("/inside.txt"))
        store_seen[outcome] = store_seen.get(outcome, 0) + 1
        naive = (lay.root / "inside.txt").read_bytes()  # what a path-based reader would get
        naive_seen[naive] = naive_seen.get(naive, 0) + 1

    flips = _race(lambda: _exchange(lay.root / "inside.txt", lay.root / "alt"), attempt)
    assert flips > 100
    assert SECRET not in store_seen
    assert set(store_seen) <= {b"INSIDE", "refused", "changed"}
    assert store_seen.get(b"INSIDE") and store_seen.get("refused"), store_seen
    assert naive_seen.get(SECRET), "the attack was not live: a naive reader never leaked"


def test_racing_parent_and_link_swap_never_leaks(lay: Layout, tmp_path: Path) -> None:
    _need_exchange(tmp_path)
    (lay.root / "alt").symlink_to(lay.outside, target_is_directory=True)
    store_seen: dict[bytes | str, int] = {}
    naive_seen: dict[bytes, int] = {}

    def attempt() -> None:
        outcome = _read_outcome(lay.store, P("/sub/inner.txt"))
        store_seen[outcome] = store_seen.get(outcome, 0) + 1
        naive = (lay.root / "sub" / "inner.txt").read_bytes()
        naive_seen[naive] = naive_seen.get(naive, 0) + 1

    flips = _race(lambda: _exchange(lay.root / "sub", lay.root / "alt"), attempt)
    assert flips > 100
    assert SECRET not in store_seen
    assert set(store_seen) <= {b"INNER", "refused", "changed"}
    assert store_seen.get(b"INNER") and store_seen.get("refused"), store_seen
    assert naive_seen.get(SECRET), "the attack was not live: a naive reader never leaked"


def test_racing_swap_during_writes_never_touches_outside(lay: Layout, tmp_path: Path) -> None:
    _need_exchange(tmp_path)
    (lay.root / "alt").symlink_to(lay.outside / "secret.txt")
    (lay.root / "alt-dir").symlink_to(lay.outside, target_is_directory=True)
    before = lay.snapshot()
    outcomes: dict[str, int] = {}

    def flip() -> None:
        _exchange(lay.root / "inside.txt", lay.root / "alt")
        _exchange(lay.root / "sub", lay.root / "alt-dir")

    def attempt() -> None:
        for path, mode in (
            (P("/inside.txt"), WriteMode.OVERWRITE),
            (P("/inside.txt"), WriteMode.APPEND),
            (P("/sub/inner.txt"), WriteMode.OVERWRITE),
            (P("/sub/planted.txt"), WriteMode.CREATE),
        ):
            try:
                _drive(lay.store.write(path, b"W", mode=mode))
                outcome = "written"
            except OperationError as exc:
                outcome = type(exc).__name__
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        # A write that lands while the link sits at /inside.txt replaces the link itself;
        # put a fresh link back (atomically) so that the race stays live.
        if not (lay.root / "inside.txt").is_symlink() and not (lay.root / "alt").is_symlink():
            (lay.root / "fresh").symlink_to(lay.outside / "secret.txt")
            os.rename(lay.root / "fresh", lay.root / "alt")

    flips = _race(flip, attempt)
    assert flips > 100
    assert "UnsupportedFileError" in outcomes, outcomes
    assert "written" in outcomes, outcomes
    assert lay.snapshot() == before
    assert lay.temps() == []


# -- reads answered from memory on the event loop (``_cached``): swaps after its look -------------


def _need_cached(store: LocalStore) -> None:
    if store._cached is None:
        pytest.skip("openat2(RESOLVE_CACHED) is not available here: every read takes a thread")


def _after_fstat(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> list[int]:
    """``swap`` runs just after the first ``os.fstat``: the cached path looked at the entry
    (an ``O_PATH`` descriptor) and is about to open it for reading."""
    real = os.fstat
    fired: list[int] = []

    def hooked(fd: int) -> os.stat_result:
        result = real(fd)
        if not fired:
            fired.append(fd)
            swap()
        return result

    monkeypatch.setattr(os, "fstat", hooked)
    return fired


async def test_cached_read_serves_a_hot_file_without_a_thread(lay: Layout) -> None:
    _need_cached(lay.store)
    assert await lay.store.read_all(P("/sub/inner.txt")) == b"INNER"  # warms the caches
    loop_thread = threading.get_ident()
    seen: list[int] = []
    real = os.preadv

    def spy(fd: int, buffers: list[bytearray], offset: int, flags: int = 0) -> int:
        seen.append(threading.get_ident())
        return real(fd, buffers, offset, flags)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(os, "preadv", spy)
        info, data = await lay.store.read_file(P("/sub/inner.txt"))
    assert (info.size, data) == (5, b"INNER")
    assert seen == [loop_thread]


@pytest.mark.parametrize("target", ["/inside.txt", "/sub/inner.txt"])
async def test_cached_read_of_a_file_swapped_for_a_link_is_refused(
    lay: Layout, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    _need_cached(lay.store)
    await lay.store.read_all(P(target))  # in the caches
    entry = lay.root / target.lstrip("/")
    fired = _after_fstat(monkeypatch, _to_link(entry, lay.outside / "secret.txt"))
    with pytest.raises(UnsupportedFileError, match=f"{target} {LINK_REFUSED}"):
        await lay.store.read_file(P(target))
    assert fired and entry.is_symlink()


async def test_cached_read_of_a_parent_swapped_for_a_link_is_refused(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_cached(lay.store)
    await lay.store.read_all(P("/sub/inner.txt"))
    fired = _after_fstat(monkeypatch, _to_link(lay.root / "sub", lay.outside))
    with pytest.raises(UnsupportedFileError, match=f"/sub {LINK_REFUSED}"):
        await lay.store.read_file(P("/sub/inner.txt"))
    assert fired and (lay.root / "sub").is_symlink()


async def test_cached_read_of_a_file_swapped_for_a_fifo_is_refused(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_cached(lay.store)
    await lay.store.read_all(P("/inside.txt"))
    target = lay.root / "inside.txt"

    def swap() -> None:
        target.unlink()
        os.mkfifo(target)

    fired = _after_fstat(monkeypatch, swap)
    with pytest.raises(UnsupportedFileError, match=r"/inside\.txt is a FIFO"):
        await lay.store.read_file(P("/inside.txt"))
    assert fired


async def test_cached_stat_never_reports_a_link_or_a_special_file(lay: Layout) -> None:
    _need_cached(lay.store)
    (lay.root / "link").symlink_to(lay.outside / "secret.txt")
    os.mkfifo(lay.root / "pipe")
    for name, refusal in (("link", LINK_REFUSED), ("pipe", "is a FIFO")):
        with pytest.raises(UnsupportedFileError, match=refusal):
            await lay.store.stat(P(f"/{name}"))
        with pytest.raises(UnsupportedFileError, match=refusal):
            await lay.store.read_file(P(f"/{name}"))


async def test_cached_look_of_a_very_deep_or_missing_path_is_a_plain_not_found(
    lay: Layout,
) -> None:
    # 2000 segments under a real folder: longer than PATH_MAX, and each parent missing.
    for raw in ("/sub/" + "a/" * 2000, "/sub/" + "a/" * 1000 + "b.md", "/sub/x/y/z.md"):
        with pytest.raises(NotFoundError):
            await lay.store.stat(P(raw))
        with pytest.raises(NotFoundError):
            await lay.store.read_file(P(raw))
    with pytest.raises(NotFoundError, match=r"/sub/none\.md not found"):
        await lay.store.read_file(P("/sub/none.md"))  # a cached miss: the walk's words
