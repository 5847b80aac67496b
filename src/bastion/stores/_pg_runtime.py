"""The PostgreSQL store's connection machinery: its own event loop, the pool, timeouts, errors.

One private loop. A psycopg ``AsyncConnectionPool`` belongs to the event loop it was opened
on, but a store is shared: by the tasks of one loop, by threads that each run their own
(``asyncio.run`` per call), by the blocking facade's loop. So the pool lives on a loop of the
store's own, in a daemon thread started on first use, and every call is submitted to it; the
caller awaits the answer on its own loop. The hop costs tens of microseconds, a fraction of
one round trip to the server, and it buys one more thing: work abandoned after a timeout
finishes (or is torn down) on the store's loop, never on the caller's, whose loop may already
be gone.

Every call is bounded. The caller waits at most ``timeout`` seconds for the answer, then gets
:class:`StoreUnavailableError` and the work on the store's loop is cancelled (psycopg cancels
the query on the server, or closes the connection when the server does not answer). Below
that bound the store limits its own waits too: a pool acquire gives up after ``timeout``, a
connection attempt after ``connect_timeout``, a statement or a lock wait on the server after
``statement_timeout`` / ``lock_timeout``, and a session left idle inside a transaction (a
client process stopped with its locks held) is ended by the server.

Errors. psycopg's errors become Bastion's at this edge, with one-line messages that start
with the store path (so the workspace can re-word them with the full path) and never contain
the DSN: a server that does not answer or cannot be reached is
:class:`StoreUnavailableError` ("filesystem unresponsive"); anything else the server refuses is
:class:`StoreError` with its SQLSTATE. A deadlock or serialization failure rolls the whole
transaction back, so the operation is retried (twice) before it is reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

import psycopg
from psycopg import errors, pq
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bastion.core.errors import (
    BastionError,
    InvalidPathError,
    OperationError,
    StoreError,
    StoreUnavailableError,
)
from bastion.core.paths import VPath
from bastion.stores._pg_rows import Conn, namespace
from bastion.stores._pg_schema import migrate

__all__ = ["PgRuntime", "Work"]

T = TypeVar("T")

Work = Callable[[Conn, int, float], Awaitable[T]]
"""What a call runs on the store's loop: ``work(conn, namespace_id, namespace_created)``."""

_ROLLBACK_RETRIES: Final = 2
_SHUTDOWN_GRACE: Final = 2.0
_ABANDONED_GRACE: Final = 12.0
"""How long the loop's thread waits, on its way out, for calls abandoned after a timeout:
psycopg spends up to 10 s cancelling a query on a server that does not answer."""
_IDLE_IN_TRANSACTION_MIN: Final = 10.0


async def _configure(conn: Conn, *, statement_ms: int, idle_ms: int) -> None:
    """Bound the server-side waits of every new connection."""
    await conn.execute(
        "SELECT set_config('statement_timeout', %s, false),"
        " set_config('lock_timeout', %s, false),"
        " set_config('idle_in_transaction_session_timeout', %s, false)",
        (str(statement_ms), str(statement_ms), str(idle_ms)),
    )


def _alive(conn: Conn) -> bool:
    """Whether an idle pooled connection still has a server behind it, without a round trip:
    reading what the server sent while the connection was idle finds a closed socket (a
    restarted or killed server) at once."""
    pgconn = conn.pgconn
    if pgconn.status == pq.ConnStatus.OK:
        try:
            pgconn.consume_input()
        except psycopg.OperationalError:
            return False
    return pgconn.status == pq.ConnStatus.OK


@dataclass
class _State:
    """What lives on the store's loop. The loop's thread holds it too, so that a store
    dropped without ``close`` still has its pool closed there, not torn down by the GC."""

    pool: AsyncConnectionPool[Conn] | None = None
    ns: tuple[int, float] | None = None
    opening: asyncio.Lock | None = None


def _run_loop(loop: asyncio.AbstractEventLoop, state: _State) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        if state.pool is not None:
            pool, state.pool = state.pool, None
            with contextlib.suppress(Exception):
                loop.run_until_complete(
                    asyncio.wait_for(pool.close(timeout=_SHUTDOWN_GRACE), 2 * _SHUTDOWN_GRACE)
                )
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=_ABANDONED_GRACE))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _stop_loop(loop: asyncio.AbstractEventLoop) -> None:
    with contextlib.suppress(RuntimeError):  # already closed
        loop.call_soon_threadsafe(loop.stop)


class PgRuntime:
    """The loop thread, the pool and the namespace id of one store (see the module doc)."""

    def __init__(
        self, dsn: str, *, namespace: str, pool_min: int, pool_max: int, timeout: float
    ) -> None:
        self._dsn = dsn
        self.namespace = namespace
        self.timeout = timeout
        self._pool_min = pool_min
        self._pool_max = pool_max
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._state = _State()

    # -- the caller's side -----------------------------------------------------------------

    def deadline(self) -> float:
        """The ``time.monotonic()`` by which a call that starts now must have answered."""
        return time.monotonic() + self.timeout

    async def run(self, path: VPath, work: Work[T], *, deadline: float | None = None) -> T:
        """Run ``work`` on a pooled connection; answer within ``timeout`` (or by ``deadline``,
        for a call made of several steps) or raise :class:`StoreUnavailableError`."""
        left = self.timeout if deadline is None else deadline - time.monotonic()
        if left <= 0:
            raise StoreUnavailableError(self.unresponsive(path))
        loop = self._started(path)
        future = asyncio.run_coroutine_threadsafe(self._serve(path, work), loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), left)
        except TimeoutError:
            raise StoreUnavailableError(self.unresponsive(path)) from None

    def unresponsive(self, path: VPath) -> str:
        return (
            f"{path}: filesystem unresponsive: PostgreSQL (namespace {self.namespace!r}) "
            f"did not answer within {self.timeout:g}s; retry later"
        )

    def _started(self, path: VPath) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise StoreError(path=path, reason="the PostgreSQL store is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_run_loop,
                    args=(loop, self._state),
                    name="bastion-postgres",
                    daemon=True,
                )
                thread.start()
                self._loop, self._thread = loop, thread
                weakref.finalize(self, _stop_loop, loop)
            return self._loop

    async def close(self) -> None:
        """Close the pool and stop the loop thread (the thread closes the pool on its way
        out, and finishes in the background if calls abandoned after a timeout are still
        being cancelled on a server that does not answer); later calls raise
        :class:`StoreError`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        _stop_loop(loop)
        await asyncio.to_thread(thread.join, 3 * _SHUTDOWN_GRACE)

    # -- the store's loop ------------------------------------------------------------------

    async def _ready(self) -> tuple[AsyncConnectionPool[Conn], int, float]:
        state = self._state
        if state.pool is None or state.ns is None:
            if state.opening is None:
                state.opening = asyncio.Lock()
            async with state.opening:
                if state.pool is None:
                    state.pool = await self._open_pool()
                if state.ns is None:
                    async with state.pool.connection() as conn:
                        await migrate(conn)
                        state.ns = await namespace(conn, self.namespace)
        return state.pool, state.ns[0], state.ns[1]

    async def _open_pool(self) -> AsyncConnectionPool[Conn]:
        statement_ms = max(1, round(self.timeout * 1000))
        idle_ms = round(max(2 * self.timeout, _IDLE_IN_TRANSACTION_MIN) * 1000)
        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            self._dsn,
            kwargs={"autocommit": True, "connect_timeout": max(2, math.ceil(self.timeout))},
            min_size=self._pool_min,
            max_size=self._pool_max,
            open=False,
            timeout=self.timeout,
            # Give up reconnecting soon: the next call starts afresh, so a server that comes
            # back is used at once instead of after an ever longer back-off.
            reconnect_timeout=max(self.timeout, 1.0),
            configure=functools.partial(_configure, statement_ms=statement_ms, idle_ms=idle_ms),
            name=f"bastion-fs-{self.namespace}",
        )
        await pool.open()
        return pool

    async def _serve(self, path: VPath, work: Work[T]) -> T:
        attempt = 0
        while True:
            try:
                pool, ns, created = await self._ready()
                conn = await self._connection(pool)
                try:
                    return await work(conn, ns, created)
                finally:
                    await pool.putconn(conn)
            except BastionError:
                raise
            except errors.TransactionRollback as exc:
                attempt += 1
                if attempt > _ROLLBACK_RETRIES:
                    raise self._translate(exc, path) from exc
            except (psycopg.Error, PoolTimeout) as exc:
                raise self._translate(exc, path) from exc

    async def _connection(self, pool: AsyncConnectionPool[Conn]) -> Conn:
        """A live connection: pooled ones whose server went away are handed back (the pool
        discards them) and the next one is taken at once."""
        for _ in range(self._pool_max):
            conn = await pool.getconn()
            if _alive(conn):
                return conn
            await pool.putconn(conn)
        return await pool.getconn()

    def _translate(self, exc: Exception, path: VPath) -> OperationError:
        ns = self.namespace
        if isinstance(exc, PoolTimeout):
            return StoreUnavailableError(self.unresponsive(path))
        if isinstance(exc, errors.ProgramLimitExceeded):
            return InvalidPathError(
                path=path, reason="the path is too long for the PostgreSQL store"
            )
        if isinstance(exc, errors.QueryCanceled | errors.LockNotAvailable):
            return StoreUnavailableError(
                f"{path}: filesystem unresponsive: PostgreSQL (namespace {ns!r}) did not "
                f"finish within {self.timeout:g}s (busy or locked); retry later",
                path=path,
            )
        if isinstance(exc, errors.DiskFull):
            return StoreError(
                f"{path}: no space left on the disk of this mount's database; "
                "free space and retry (ask an operator)",
                path=path,
            )
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return StoreError(
                f"{path}: the database of this mount is read-only (a standby?); "
                "writes need the primary (ask an operator)",
                path=path,
            )
        if isinstance(exc, errors.InsufficientPrivilege):
            return StoreError(
                f"{path}: the database refused this mount's role; "
                "grant the role access to the Bastion tables (ask an operator)",
                path=path,
            )
        if isinstance(exc, psycopg.OperationalError):
            return StoreUnavailableError(
                f"{path}: filesystem unresponsive: lost the connection to PostgreSQL "
                f"(namespace {ns!r}); retry later",
                path=path,
            )
        code = getattr(exc, "sqlstate", None) or type(exc).__name__
        return StoreError(path=path, reason=f"the PostgreSQL store failed ({code}); retry")
