"""Stores for the security suites: each attack runs against the memory and the local store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore

STORE_KINDS = ["memory", "local"]


def new_store(kind: str, tmp_path: Path, name: str) -> Store:
    """A fresh empty store of ``kind``; local stores get their own folder ``name``."""
    if kind == "memory":
        return MemoryStore()
    root = tmp_path / "stores" / name
    root.mkdir(parents=True)
    return LocalStore(root)


async def seed(
    store: Store, files: dict[str, str] | dict[str, bytes] | dict[str, str | bytes]
) -> None:
    """Write files straight into a store, bypassing the guard (keys ending in / are dirs)."""
    for raw, data in files.items():
        path = VPath.parse(raw)
        if raw.endswith("/"):
            await store.makedirs(path)
            continue
        await store.makedirs(path.parent)
        await store.write(path, data.encode() if isinstance(data, str) else data)


@pytest.fixture(params=STORE_KINDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], Store]:
    """``make_store(name)`` builds a store of the parametrized kind."""
    return lambda name: new_store(str(request.param), tmp_path, name)
