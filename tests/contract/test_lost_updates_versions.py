"""Two states of a file never share a version, so no stale ``if_version`` write goes through
(red-team variants of issue 16, class: *lost updates*; docs/security.md, docs/stores.md).

A version is what every ``if_version`` check compares, so two states of a file that share
one let a stale write through. These tests make states that agree on everything a version
could be made of but one:

* on the local disk, a program rewriting the file in place with the same size and putting
  its modification time back (``cp -p`` onto it, ``touch -r``): the inode is kept too, so
  only the status change time tells (it is in the version since this was found);
* the same file replaced by a rename with the old modification time;
* on every store, identical bytes written again and a same-size rewrite, each followed by a
  write on condition of the version before.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from langgraph.store.memory import InMemoryStore

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools.session import StaleFileError, ToolSession
from bastion.core.errors import ConflictError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.stores.fsspec import FsspecStore
from bastion.stores.langgraph import LangGraphStore
from bastion.stores.sqlite import SqliteStore

P = VPath.parse("/f.txt")


def _rewrite_in_place(host: Path, data: bytes) -> None:
    """What ``cp -p`` onto an existing file does: the same inode, new bytes, old times."""
    before = os.stat(host)
    with open(host, "r+b") as fh:
        fh.write(data)
        fh.truncate(len(data))
    os.utime(host, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(host)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


async def test_an_in_place_rewrite_keeping_size_and_mtime_changes_the_version(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    first = await store.write(P, b"hello\n")
    _rewrite_in_place(tmp_path / "f.txt", b"HELLO\n")
    now = await store.stat(P)
    assert now.version != first.version
    listed = {e.path: e.version for e in await store.list(VPath.ROOT)}
    read, _ = await store.read_file(P)
    assert listed[P] == read.version == now.version  # one version, whichever way it is asked
    for mode in (WriteMode.OVERWRITE, WriteMode.APPEND):
        with pytest.raises(ConflictError):
            await store.write(P, b"stale\n", mode=mode, if_version=first.version)
    assert await store.read_all(P) == b"HELLO\n"
    again = await store.write(P, b"fresh\n", if_version=now.version)
    assert again.version == (await store.stat(P)).version


async def test_an_in_place_rewrite_makes_the_edit_and_the_tools_stale(tmp_path: Path) -> None:
    ws = Workspace(
        [Mount.of("/m", LocalStore(tmp_path))],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    await ws.write("/m/f.txt", "alpha\nbeta\n")
    session = ToolSession(ws)
    path = VPath.parse("/m/f.txt")
    await session.read_page(path, 0, 100)
    version = (await ws.stat(path)).version
    _rewrite_in_place(tmp_path / "f.txt", b"ALPHA\nbeta\n")
    with pytest.raises(StaleFileError):
        await session.write(path, "alpha\nbeta\ngamma\n")
    with pytest.raises(StaleFileError):
        await session.edit(path, "beta", "BETA", replace_all=False)
    with pytest.raises(ConflictError):
        await ws.edit(path, "beta", "BETA", if_version=version)
    with pytest.raises(ConflictError):
        await ws.write(path, "x\n", if_version=version, backup=True)
    assert await ws.read_text(path) == "ALPHA\nbeta\n"


async def test_a_replacement_keeping_the_modification_time_changes_the_version(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    first = await store.write(P, b"hello\n")
    old = os.stat(tmp_path / "f.txt")
    (tmp_path / "other").write_bytes(b"HELLO\n")
    os.utime(tmp_path / "other", ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(tmp_path / "other", tmp_path / "f.txt")
    assert (await store.stat(P)).version != first.version
    with pytest.raises(ConflictError):
        await store.write(P, b"stale\n", if_version=first.version)


@pytest.fixture(params=["memory", "local", "sqlite", "fsspec-memory", "langgraph"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store
    if request.param == "local":
        made = LocalStore(tmp_path)
    elif request.param == "sqlite":
        made = SqliteStore(tmp_path / "ws.db")
    elif request.param == "fsspec-memory":
        made = FsspecStore(fsspec.filesystem("memory"), root=f"/t-{uuid.uuid4().hex}")
    elif request.param == "langgraph":
        made = LangGraphStore(InMemoryStore(), ("t",))
    else:
        made = MemoryStore()
    yield made
    if isinstance(made, SqliteStore):
        made.close()


@pytest.mark.parametrize("second", [b"abc\n", b"xyz\n"], ids=["identical", "same-size"])
async def test_a_rewrite_between_a_read_and_a_conditional_write_is_caught(
    store: Store, second: bytes
) -> None:
    first = await store.write(P, b"abc\n")
    await store.write(P, second)
    for mode in (WriteMode.OVERWRITE, WriteMode.APPEND):
        with pytest.raises(ConflictError):
            await store.write(P, b"stale\n", mode=mode, if_version=first.version)
    assert await store.read_all(P) == second
