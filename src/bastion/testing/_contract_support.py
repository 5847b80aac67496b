"""What the store contract's parts share: the fixture every subclass provides, sample data
and helpers (``bastion.testing.StoreContract`` puts the parts together)."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from bastion.core.errors import (
    ConflictError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = [
    "ALL_BYTES",
    "WALK_TREE",
    "ContractBase",
    "MiB",
    "P",
    "blob",
    "build",
    "increment",
    "listing",
    "walk_all",
]

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


def blob(size: int, seed: int = 0) -> bytes:
    """Deterministic pseudo-random bytes (every byte value, no repeating period to hide in)."""
    return random.Random(seed).randbytes(size)  # noqa: S311 - test data, not secrets


async def build(store: Store, tree: dict[str, bytes | None]) -> None:
    """Create ``tree`` (path -> content; ``None`` for a directory), parents first."""
    for raw in sorted(tree, key=lambda p: P(p).depth):
        content = tree[raw]
        if content is None:
            await store.mkdir(P(raw))
        else:
            await store.write(P(raw), content, mode=WriteMode.CREATE)


async def listing(store: Store, raw: str) -> dict[str, tuple[EntryKind, int]]:
    return {str(i.path): (i.kind, i.size) for i in await store.list(P(raw))}


async def walk_all(store: Store, raw: str = "/", max_depth: int | None = None) -> list[FileInfo]:
    return [info async for info in store.walk(P(raw), max_depth=max_depth)]


async def increment(store: Store, path: VPath, times: int, *, threaded: bool) -> int:
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


class ContractBase:
    """The fixture and the switch every part of the contract reads."""

    reads_labels = False
    """True for a store that reads document labels out of what it holds (front matter, a
    ``<name>.labels.yaml`` sidecar): ``DocumentLabels`` and the workspace's stack above it.
    Such a store refuses content whose labels it could not read back, since the file would be
    hidden from everybody; to any other store content is bytes."""

    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError("a StoreContract subclass must provide the `store` fixture")
