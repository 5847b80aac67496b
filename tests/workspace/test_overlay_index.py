"""An overlay's review keeps the index right, over every kind of base: after a discard the
search no longer finds what the layer held and finds the base's content again (files written,
files deleted, one path or all); after an apply the index holds what the base now holds, at the
base's version. Folders made in a layer are applied, and a deleted folder is deleted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, VPath, Workspace
from bastion.core.ports import Store
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.stores.local import LocalStore
from bastion.stores.overlay_layers import ThreadLayers
from bastion.stores.postgres import PostgresStore
from bastion.stores.sqlite import SqliteStore

P = VPath.parse
BASE = {
    "/notes.md": "The base speaks of pelicans.\n",
    "/keep.md": "A kept page about herons.\n",
    "/old/one.md": "An old page about otters.\n",
}


@pytest.fixture(params=["folder", "sqlite", "memory", "postgres"])
def make_base(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """A fresh base store of each kind (PostgreSQL on the shared test server)."""
    if request.param == "folder":
        (tmp_path / "base").mkdir()
        yield lambda: LocalStore(tmp_path / "base")
    elif request.param == "sqlite":
        yield lambda: SqliteStore(tmp_path / "base.db")
    elif request.param == "memory":
        yield MemoryStore
    else:
        dsn = request.getfixturevalue("pg_dsn")
        yield lambda: PostgresStore(dsn, namespace="base")


async def _close(store: Store) -> None:
    closer: Any = getattr(store, "close", None)
    if callable(closer):
        outcome = closer()
        if outcome is not None:
            await outcome


async def _workspace(base: Store) -> tuple[Workspace, MemoryIndex]:
    for path, text in BASE.items():
        await base.makedirs(P(path).parent)
        await base.write(P(path), text.encode())
    index = MemoryIndex()
    mount = Mount.of("/code", ThreadLayers(base, MemoryStore()))
    ws = Workspace(
        [mount],
        policy=Policy.allow_all(),
        principal=Principal.of("ana"),
        knowledge=Knowledge(index),
    )
    await ws.index_directory("/code")
    return ws, index


async def _found(ws: Workspace, word: str) -> set[str]:
    return {hit.path for hit in (await ws.search(word, mode="bm25", k=10)).hits}


async def _change(ws: Workspace) -> None:
    await ws.write("/code/notes.md", "The layer speaks of walruses.\n")
    await ws.write("/code/new.md", "Zebras live in the layer.\n")
    await ws.delete("/code/keep.md")
    await ws.delete("/code/old", recursive=True)
    assert await _found(ws, "walruses") == {"/code/notes.md"}
    assert await _found(ws, "zebras") == {"/code/new.md"}


async def test_discard_brings_the_base_back_into_the_index(
    make_base: Callable[[], Store],
) -> None:
    base = make_base()
    try:
        ws, _ = await _workspace(base)
        t1 = ws.with_thread("t1")
        await _change(t1)
        done = await t1.overlay("/code").discard()
        assert sorted(done.discarded) == [
            "/code/keep.md",
            "/code/new.md",
            "/code/notes.md",
            "/code/old",
        ]
        # The base's words first: a search of the layer's words could repair a hit on its own.
        assert await _found(t1, "pelicans") == {"/code/notes.md"}
        assert await _found(t1, "herons") == {"/code/keep.md"}
        assert await _found(t1, "otters") == {"/code/old/one.md"}
        assert await _found(t1, "walruses") == set()
        assert await _found(t1, "zebras") == set()
        assert await base.read_all(P("/notes.md")) == BASE["/notes.md"].encode()
    finally:
        await _close(base)


async def test_discarding_one_path_reindexes_that_path_only(
    make_base: Callable[[], Store],
) -> None:
    base = make_base()
    try:
        ws, _ = await _workspace(base)
        t1 = ws.with_thread("t1")
        await _change(t1)
        done = await t1.overlay("/code").discard(["/code/notes.md", "/code/keep.md"])
        assert sorted(done.discarded) == ["/code/keep.md", "/code/notes.md"]
        assert await _found(t1, "pelicans") == {"/code/notes.md"}
        assert await _found(t1, "herons") == {"/code/keep.md"}
        assert await _found(t1, "walruses") == set()
        assert await _found(t1, "zebras") == {"/code/new.md"}  # still in the layer
        assert await _found(t1, "otters") == set()  # still deleted in the layer
    finally:
        await _close(base)


async def test_apply_leaves_the_index_at_the_base_versions(make_base: Callable[[], Store]) -> None:
    base = make_base()
    try:
        ws, index = await _workspace(base)
        t1 = ws.with_thread("t1")
        await _change(t1)
        done = await t1.overlay("/code").apply()
        assert not done.conflicts
        assert await base.read_all(P("/notes.md")) == b"The layer speaks of walruses.\n"
        assert not await base.exists(P("/keep.md")) and not await base.exists(P("/old"))
        documents = {meta.path: meta for meta in index.documents().values()}
        assert sorted(documents) == ["/code/new.md", "/code/notes.md"]
        for path, meta in documents.items():  # indexed as the base holds it, seen from outside
            assert meta.version == (await ws.stat(path)).version
        assert await _found(ws, "walruses") == {"/code/notes.md"}
        assert await _found(ws, "zebras") == {"/code/new.md"}
        assert await _found(ws, "pelicans") == set()
        assert await _found(ws, "herons") == set()
    finally:
        await _close(base)


async def test_folders_made_and_deleted_in_a_layer_are_applied(
    make_base: Callable[[], Store],
) -> None:
    base = make_base()
    try:
        ws, _ = await _workspace(base)
        t1 = ws.with_thread("t1")
        await t1.mkdir("/code/empty")
        await t1.mkdir("/code/deep")
        await t1.mkdir("/code/deep/er")
        await t1.delete("/code/old", recursive=True)
        review = t1.overlay("/code")
        changes = {c.path: (c.action, c.status) for c in await review.changes()}
        assert changes == {
            "/code/old": ("delete", "deleted"),
            "/code/empty": ("mkdir", "added"),
            "/code/deep/er": ("mkdir", "added"),  # /code/deep holds it: made by applying it
        }
        assert "New folder /code/empty" in await review.diff()
        done = await review.apply(["/code/empty", "/code/deep/er", "/code/old"])
        assert sorted(done.applied) == ["/code/deep/er", "/code/empty", "/code/old"]
        assert (await base.stat(P("/empty"))).is_dir
        assert await base.list(P("/empty")) == []
        assert (await base.stat(P("/deep/er"))).is_dir
        assert not await base.exists(P("/old"))
        assert await review.changes() == []
        assert (await ws.stat("/code/empty")).is_dir  # seen from outside the thread too
    finally:
        await _close(base)
