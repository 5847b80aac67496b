"""PostgresStore when its server hangs (every process SIGSTOPped) or dies (SIGKILL).

Each test runs a private PostgreSQL (``start_private_pg``) so that stopping it touches no other
test. A call against a hung or dead server must raise :class:`StoreUnavailableError` with a
one-line message, within the store's timeout: every call here is wrapped in a much longer
``asyncio.wait_for`` so that a call that hangs fails the test instead of blocking it. Once the
server is back the same store object works again, by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
import psycopg
import pytest

from bastion.core.errors import ConflictError, StoreError, StoreUnavailableError
from bastion.core.models import WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.stores.postgres import PostgresStore
from bastion.workspace import Workspace
from pg_support import start_private_pg

P = VPath.parse
T = TypeVar("T")

TIMEOUT = 1.0
"""The store's own timeout in these tests."""
HUNG = 30.0
"""A call that has not answered after this long has hung: the test fails."""
RECOVERY = 90.0
"""How long a recovered server may take to be usable again."""


class Server:
    """A private PostgreSQL that a test may stop, resume, kill and restart."""

    def __init__(self, folder: Path) -> None:
        self.pg = start_private_pg(folder)
        self.dsn: str = self.pg.get_uri()
        self._stopped: list[psutil.Process] = []

    def processes(self) -> list[psutil.Process]:
        postmaster = psutil.Process(self.pg.get_pid())
        return [postmaster, *postmaster.children(recursive=True)]

    def stop(self) -> None:
        """SIGSTOP the postmaster and every backend: connections stay open, nothing answers."""
        self._stopped = self.processes()
        for proc in self._stopped:
            proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        for proc in self._stopped:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGCONT)
        self._stopped = []

    def kill(self) -> None:
        procs = self.processes()
        for proc in procs:
            proc.kill()
        psutil.wait_procs(procs, timeout=30)

    def restart(self) -> None:
        self.pg.ensure_postgres_running()
        assert self.pg.get_uri() == self.dsn  # same socket: the store's DSN still points at it

    def cleanup(self) -> None:
        self.resume()
        self.pg.cleanup()


@pytest.fixture
def server() -> Iterator[Server]:
    # Not under pytest's temporary folder: another pytest run resets that folder's mode, and a
    # server started as root runs as its own user, which would then lose its data folder.
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-"))
    private = Server(folder / "pg")
    try:
        yield private
    finally:
        private.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def stores() -> AsyncIterator[Callable[..., PostgresStore]]:
    made: list[PostgresStore] = []

    def make(dsn: str, **options: Any) -> PostgresStore:
        options.setdefault("timeout", TIMEOUT)
        store = PostgresStore(dsn, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


async def unavailable(call: Awaitable[object]) -> str:
    """The message of the :class:`StoreUnavailableError` that ``call`` raises (not hanging)."""
    with pytest.raises(StoreUnavailableError) as caught:
        await asyncio.wait_for(call, HUNG)
    message = str(caught.value)
    assert "\n" not in message
    assert "filesystem unresponsive" in message
    return message


async def eventually(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``'s answer once the store answers again (it may take a few tries)."""
    deadline = time.monotonic() + RECOVERY
    while True:
        try:
            return await asyncio.wait_for(call(), HUNG)
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def every_call(store: PostgresStore) -> list[Callable[[], Awaitable[object]]]:
    return [
        lambda: store.stat(P("/doc.txt")),
        lambda: store.read_range(P("/doc.txt"), 0, 2),
        lambda: store.read_file(P("/doc.txt"), check=lambda _: None),
        lambda: store.list(VPath.ROOT),
        lambda: store.write(P("/doc.txt"), b"lost"),
        lambda: store.write(P("/doc.txt"), b"+", mode=WriteMode.APPEND),
        lambda: store.mkdir(P("/new")),
        lambda: store.rename(P("/doc.txt"), P("/moved.txt")),
        lambda: store.delete(P("/doc.txt")),
        lambda: store.set_labels(P("/doc.txt"), None),
    ]


async def test_a_stopped_server_is_unresponsive_then_recovers(
    server: Server, pg_dsn: str, stores: Callable[..., PostgresStore]
) -> None:
    store = stores(server.dsn)
    other = stores(pg_dsn)  # another filesystem, on another server
    await store.write(P("/doc.txt"), b"kept")
    await other.write(P("/other.txt"), b"fine")
    fresh = stores(server.dsn, namespace="never-opened")
    server.stop()
    try:
        for call in every_call(store):
            message = await unavailable(call())
            assert "/doc.txt" in message or "/new" in message or message.startswith("/:")
        await unavailable(fresh.stat(P("/x")))  # opening the pool is bounded too
        assert await other.read_all(P("/other.txt")) == b"fine"
        await other.write(P("/other.txt"), b"still fine")
    finally:
        server.resume()
    assert await eventually(lambda: store.read_all(P("/doc.txt"))) == b"kept"  # nothing half-done
    await store.write(P("/doc.txt"), b"written after")
    assert await store.read_all(P("/doc.txt")) == b"written after"
    assert not (await eventually(lambda: fresh.exists(P("/doc.txt"))))


async def test_a_killed_server_is_unavailable_until_restarted(
    server: Server, stores: Callable[..., PostgresStore]
) -> None:
    store = stores(server.dsn)
    await store.write(P("/doc.txt"), b"durable")
    server.kill()
    for call in every_call(store):
        await unavailable(call())
    server.restart()
    assert await eventually(lambda: store.read_all(P("/doc.txt"))) == b"durable"
    await store.write(P("/after.txt"), b"back")
    assert {i.path.name for i in await store.list(VPath.ROOT)} == {"doc.txt", "after.txt"}


async def test_other_mounts_keep_working(
    server: Server, stores: Callable[..., PostgresStore]
) -> None:
    store = stores(server.dsn)
    await store.write(P("/doc.txt"), b"on postgres")
    memory = MemoryStore()
    await memory.write(P("/note.txt"), b"in memory")
    ws = Workspace([Mount.of("/pg", store), Mount.of("/mem", memory)], policy=Policy.allow_all())
    assert await ws.read_text("/pg/doc.txt") == "on postgres"
    server.stop()
    try:
        message = await unavailable(ws.read_text("/pg/doc.txt"))
        assert "/pg" in message
        assert await ws.read_text("/mem/note.txt") == "in memory"
        await ws.write("/mem/other.txt", "written while /pg is down")
    finally:
        server.resume()
    assert await eventually(lambda: ws.read_text("/pg/doc.txt")) == "on postgres"


async def test_an_unreachable_server_names_no_password(
    tmp_path: Path, stores: Callable[..., PostgresStore]
) -> None:
    dsn = f"postgresql://bastion:hunter2@/files?host={tmp_path / 'no-server-here'}"
    store = stores(dsn)
    message = await unavailable(store.write(P("/a.txt"), b"x"))
    assert "hunter2" not in message
    assert "no-server-here" not in message
    assert "hunter2" not in store.describe()


async def test_a_row_locked_elsewhere_makes_writers_wait_only_so_long(
    pg_dsn: str, stores: Callable[..., PostgresStore]
) -> None:
    store = stores(pg_dsn)
    first = await store.write(P("/counter"), b"0")
    async with await psycopg.AsyncConnection.connect(pg_dsn) as holder:
        await holder.execute("SELECT 1 FROM bastion_fs_entries WHERE path = '/counter' FOR UPDATE")
        message = await unavailable(store.write(P("/counter"), b"1", if_version=first.version))
        assert "/counter" in message
        assert await store.read_all(P("/counter")) == b"0"  # readers are not blocked
        await holder.rollback()
    second = await store.write(P("/counter"), b"1", if_version=first.version)
    with pytest.raises(ConflictError):
        await store.write(P("/counter"), b"1", if_version=first.version)
    assert second.version != first.version


async def test_a_closed_store_says_so(pg_dsn: str, stores: Callable[..., PostgresStore]) -> None:
    store = stores(pg_dsn)
    await store.write(P("/a"), b"a")
    await store.close()
    await store.close()  # twice is fine
    with pytest.raises(StoreError, match="closed"):
        await store.stat(P("/a"))
    never_used = stores(pg_dsn)
    await never_used.close()
    with pytest.raises(StoreError, match="closed"):
        await never_used.stat(P("/a"))


async def test_closing_while_the_server_hangs_does_not_hang(
    server: Server, stores: Callable[..., PostgresStore]
) -> None:
    store = stores(server.dsn)
    await store.write(P("/doc.txt"), b"x")
    server.stop()
    try:
        await unavailable(store.stat(P("/doc.txt")))  # a call abandoned on the store's loop
        await asyncio.wait_for(store.close(), HUNG)
    finally:
        server.resume()
    with pytest.raises(StoreError, match="closed"):
        await store.stat(P("/doc.txt"))
