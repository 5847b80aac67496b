"""No lost update between several store objects over one in-process backend: the lock belongs to
what is shared (red-team variant of issue 16, class: *lost updates*; docs/security.md,
docs/stores.md).

Stores that live in the process check ``if_version``, create-only writes and appends under
a lock of their own. Two workspaces built over one LangGraph ``InMemoryStore`` (as the
documented example builds one per call), two mounts of nested namespaces, or two
``FsspecStore`` objects over fsspec's memory filesystem (one namespace per process) each had
a lock of their own: two writers checked the same version and both wrote, in one event loop
as well as from threads. Now the lock belongs to what is shared (the backend; the
filesystem's protocol and the object's full path). Compare-and-set increments from three
store objects: each value acknowledged once, the final value their count. The local disk
(roots nested in each other: ``flock`` belongs to the open file, not the process) and SQLite
(one transaction per write) are pinned alike.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import fsspec
import pytest
from langgraph.store.memory import InMemoryStore

from bastion.core.errors import AlreadyExistsError, ConflictError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.stores.fsspec import FsspecStore
from bastion.stores.langgraph import LangGraphStore
from bastion.stores.local import LocalStore
from bastion.stores.sqlite import SqliteStore

ROUNDS = 40


def _makers() -> dict[str, Callable[[Path], list[tuple[Store, VPath]]]]:
    """Three store objects over one backend, each with the path of one shared counter."""

    def langgraph(_: Path) -> list[tuple[Store, VPath]]:
        shared = InMemoryStore()
        return [(LangGraphStore(shared, ("t",)), VPath.parse("/c")) for _ in range(3)]

    def langgraph_nested(_: Path) -> list[tuple[Store, VPath]]:
        shared = InMemoryStore()
        outer = LangGraphStore(shared, ("t",))
        inner = LangGraphStore(shared, ("t", "sub"))
        return [(outer, VPath.parse("/sub/c")), (inner, VPath.parse("/c")), (outer, P_SUB)]

    def fsspec_memory(_: Path) -> list[tuple[Store, VPath]]:
        root = f"/shared-{uuid.uuid4().hex}"
        return [
            (FsspecStore(fsspec.filesystem("memory"), root=root), VPath.parse("/c"))
            for _ in range(3)
        ]

    def fsspec_nested(_: Path) -> list[tuple[Store, VPath]]:
        root = f"/shared-{uuid.uuid4().hex}"
        fs = fsspec.filesystem("memory", skip_instance_cache=True)
        outer = FsspecStore(fsspec.filesystem("memory"), root=root)
        inner = FsspecStore(fs, root=f"{root}/sub")
        return [(outer, P_SUB), (inner, VPath.parse("/c")), (inner, VPath.parse("/c"))]

    def local(root: Path) -> list[tuple[Store, VPath]]:
        (root / "sub").mkdir()
        return [
            (LocalStore(root), P_SUB),
            (LocalStore(root / "sub"), VPath.parse("/c")),
            (LocalStore(root), P_SUB),
        ]

    def sqlite(folder: Path) -> list[tuple[Store, VPath]]:
        db = folder / "ws.db"
        return [(SqliteStore(db), VPath.parse("/c")) for _ in range(3)]

    return {
        "local-nested-roots": local,
        "sqlite": sqlite,
        "langgraph": langgraph,
        "langgraph-nested-namespaces": langgraph_nested,
        "fsspec-memory": fsspec_memory,
        "fsspec-memory-nested-roots": fsspec_nested,
    }


P_SUB = VPath.parse("/sub/c")
MAKERS = _makers()


async def _prepare(store: Store, path: VPath) -> None:
    if not path.parent.is_root:
        await store.makedirs(path.parent)
    await store.write(path, b"0")


async def _increment(store: Store, path: VPath, acks: list[int], lock: threading.Lock) -> None:
    done = 0
    while done < ROUNDS:
        info, data = await store.read_file(path)
        value = int(data)
        try:
            await store.write(path, b"%d" % (value + 1), if_version=info.version)
        except ConflictError:
            continue
        with lock:
            acks.append(value + 1)
        done += 1


def _check(acks: list[int], final: int, writers: int) -> None:
    assert len(acks) == writers * ROUNDS
    assert sorted(acks) == list(range(1, writers * ROUNDS + 1)), "a value written twice"
    assert final == writers * ROUNDS, "lost updates"


@pytest.mark.parametrize("kind", list(MAKERS))
async def test_stores_over_one_backend_in_one_loop_lose_nothing(kind: str, tmp_path: Path) -> None:
    pairs = MAKERS[kind](tmp_path)
    await _prepare(*pairs[0])
    acks: list[int] = []
    lock = threading.Lock()
    await asyncio.gather(*(_increment(store, path, acks, lock) for store, path in pairs))
    store, path = pairs[0]
    _check(acks, int(await store.read_all(path)), len(pairs))


@pytest.mark.parametrize("kind", list(MAKERS))
def test_stores_over_one_backend_in_threads_lose_nothing(kind: str, tmp_path: Path) -> None:
    pairs = MAKERS[kind](tmp_path)
    asyncio.run(_prepare(*pairs[0]))
    acks: list[int] = []
    lock = threading.Lock()
    threads = [
        threading.Thread(target=asyncio.run, args=(_increment(store, path, acks, lock),))
        for store, path in pairs
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    store, path = pairs[0]
    _check(acks, int(asyncio.run(store.read_all(path))), len(pairs))


@pytest.mark.parametrize("kind", list(MAKERS))
async def test_create_races_over_one_backend_have_one_winner(kind: str, tmp_path: Path) -> None:
    pairs = MAKERS[kind](tmp_path)
    store, path = pairs[0]
    if not path.parent.is_root:
        await store.makedirs(path.parent)
    results = await asyncio.gather(
        *(s.write(p, b"%d" % n, mode=WriteMode.CREATE) for n, (s, p) in enumerate(pairs)),
        return_exceptions=True,
    )
    won = [n for n, r in enumerate(results) if not isinstance(r, BaseException)]
    assert len(won) == 1, results
    assert all(
        isinstance(r, AlreadyExistsError) for r in results if isinstance(r, BaseException)
    ), results
    assert await store.read_all(path) == b"%d" % won[0]
