"""The blocking facade over the stores that hold connections, threads or a loop of their own:
SQLite (a connection pool worked from threads), PostgreSQL (a pool on the store's own loop; a
real server from ``pgserver``) and S3 (``s3fs`` on fsspec's loop; moto's server on loopback).

Each store is used through ``SyncWorkspace`` from the calling thread, from several threads at
once, from inside a running event loop, and then through the async workspace on a loop of
the test's own: a store serves every loop and thread that calls it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import s3fs
from moto_s3 import make_bucket, moto_endpoint

from bastion.core.errors import NotFoundError
from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.core.ports import Store
from bastion.stores.fsspec import FsspecStore
from bastion.stores.postgres import PostgresStore
from bastion.stores.sqlite import SqliteStore
from bastion.workspace import SyncWorkspace
from bastion.workspace.blocking import run_blocking


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_endpoint() as endpoint:
        make_bucket(endpoint, "facade")
        yield endpoint


def _close(store: Store) -> None:
    closer = getattr(store, "close", None)
    if callable(closer):
        outcome = closer()
        if asyncio.iscoroutine(outcome):
            run_blocking(outcome)


@pytest.fixture(params=["sqlite", "postgres", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store
    if request.param == "sqlite":
        made = SqliteStore(tmp_path / "ws.db")
    elif request.param == "postgres":
        made = PostgresStore(request.getfixturevalue("pg_dsn"), namespace="facade")
    else:
        endpoint = request.getfixturevalue("s3_endpoint")
        fs: Any = s3fs.S3FileSystem(
            skip_instance_cache=True, endpoint_url=endpoint, key="testing", secret="testing"
        )
        made = FsspecStore(fs, root=f"facade/{uuid.uuid4().hex}")
    try:
        yield made
    finally:
        _close(made)


def _facade(store: Store) -> SyncWorkspace:
    return SyncWorkspace.create([Mount.of("/s", store)], policy=Policy.allow_all())


def test_the_calling_thread(store: Store) -> None:
    ws = _facade(store)
    ws.mkdir("/s/docs")
    ws.write("/s/docs/a.md", "alpha\nbeta\n")
    assert ws.read_text("/s/docs/a.md") == "alpha\nbeta\n"
    assert ws.stat("/s/docs/a.md").size == len("alpha\nbeta\n")
    ws.edit("/s/docs/a.md", "beta", "gamma")
    assert ws.read_bytes("/s/docs/a.md") == b"alpha\ngamma\n"
    assert [str(e.path) for e in ws.list("/s/docs")] == ["/s/docs/a.md"]
    ws.delete("/s/docs/a.md")
    with pytest.raises(NotFoundError):
        ws.read_text("/s/docs/a.md")


def test_threads_sharing_one_facade(store: Store) -> None:
    ws = _facade(store)

    def worker(t: int) -> list[str]:
        seen = []
        for i in range(5):
            ws.write(f"/s/t{t}/{i}.txt", f"{t}:{i}")
            seen.append(ws.read_text(f"/s/t{t}/{i}.txt"))
        return seen

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(worker, range(4)))
    assert results == [[f"{t}:{i}" for i in range(5)] for t in range(4)]
    assert sorted(str(e.path) for e in ws.list("/s")) == [f"/s/t{t}" for t in range(4)]


def test_inside_a_running_loop_then_on_the_callers_own_loop(store: Store) -> None:
    ws = _facade(store)

    async def app() -> str:
        ws.write("/s/inside.txt", "from a running loop")  # blocks this loop, and works
        return ws.read_text("/s/inside.txt")

    assert asyncio.run(app()) == "from a running loop"
    ws.write("/s/plain.txt", "plain")

    async def on_my_loop() -> tuple[str, str]:
        return (
            await ws.aio.read_text("/s/inside.txt"),
            await ws.aio.read_text("/s/plain.txt"),
        )

    assert asyncio.run(on_my_loop()) == ("from a running loop", "plain")
    assert ws.read_text("/s/plain.txt") == "plain"  # and the facade again, after that loop
