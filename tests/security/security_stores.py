"""Stores for the security suites (each attack runs against the memory and the local store),
and the helpers the suites share."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

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


async def snapshot(store: Store) -> dict[str, bytes | None]:
    """Every entry of a store: file content, or ``None`` for a directory."""
    out: dict[str, bytes | None] = {}
    async for info in store.walk():
        out[str(info.path)] = None if info.is_dir else await store.read_all(info.path)
    return out


async def caught(aw: Awaitable[Any]) -> BaseException:
    """The error ``aw`` raises (failing the test if it raises none)."""
    try:
        await aw
    except Exception as exc:
        return exc
    raise AssertionError("expected an error, the call succeeded")


def same_form(exc_a: BaseException, path_a: str, exc_b: BaseException, path_b: str) -> bool:
    """Two errors that differ only in the path they name."""
    return type(exc_a) is type(exc_b) and str(exc_a).replace(path_a, "<P>") == str(exc_b).replace(
        path_b, "<P>"
    )
