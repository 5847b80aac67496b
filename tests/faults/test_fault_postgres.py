"""A PostgreSQL mount whose server restarts while a write's transaction is open.

A private server (``pg_support.start_private_pg``) so the restart touches no other test. The
write is caught in the middle of its transaction deterministically: another session holds
the file rows locked (``SELECT ... FOR UPDATE``), the store's write blocks inside its
transaction waiting for them (seen in ``pg_stat_activity``), and then the server is restarted
(a fast shutdown, as ``pg_ctl restart -m fast`` does, then a start). The write fails with a
one-line error naming the mount and saying to retry later, the file keeps its old content whole
(or, where the write commits just before its session is stopped, the new content whole), and
once the server is back the same workspace writes again.

Also on a private server: a database made read-only (as a standby is) still serves reads and
refuses writes saying why, and a role without rights on the tables is told to ask for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
import psycopg
import pytest

from bastion import Knowledge, Mount, Policy, Workspace
from bastion.core.errors import StoreError, StoreUnavailableError
from bastion.stores.postgres import PostgresStore
from pg_support import start_private_pg

from .support import says

T = TypeVar("T")
PATIENCE = 90.0
"""How long a restarted server may take to answer again."""


@pytest.fixture
def server() -> Iterator[Any]:
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-fault-"))
    pg = start_private_pg(folder)
    try:
        yield pg
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def _restart(pg: Any) -> None:
    """Fast shutdown (SIGINT to the postmaster: open transactions are rolled back and the
    sessions cut), then start the server again on the same socket."""
    postmaster = psutil.Process(pg.get_pid())
    uri = pg.get_uri()
    postmaster.send_signal(signal.SIGINT)
    postmaster.wait(timeout=60)
    pg.ensure_postgres_running()
    assert pg.get_uri() == uri


async def _eventually(call: Callable[[], Awaitable[T]]) -> T:
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            return await call()
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _wait_for_lock_waiter(dsn: str) -> None:
    """Until a session waits for a row lock (the store's write, inside its transaction)."""
    deadline = time.monotonic() + PATIENCE
    with psycopg.connect(dsn, autocommit=True) as watcher:
        while time.monotonic() < deadline:
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.05)
    pytest.fail("the store's write never reached the locked rows")


async def test_a_restart_in_the_middle_of_a_write_keeps_the_old_content(server: Any) -> None:
    dsn = server.get_uri()
    store = PostgresStore(dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        await ws.write("/pg/ledger.md", "# Ledger\n\nbalance forty\n")
        blocker = psycopg.connect(dsn)  # a transaction holding every file row
        blocker.execute("SELECT 1 FROM bastion_fs_entries FOR UPDATE").fetchall()
        try:
            writing = asyncio.create_task(ws.write("/pg/ledger.md", "# Ledger\n\nbalance fifty\n"))
            await _wait_for_lock_waiter(dsn)
            assert not writing.done()
            await asyncio.to_thread(_restart, server)
            try:
                await asyncio.wait_for(writing, PATIENCE)
                failed: StoreError | None = None
            except StoreError as exc:
                failed = exc
        finally:
            with contextlib.suppress(psycopg.Error):
                blocker.close()
        # Nearly always the write is cut and fails; rarely the blocker's session ends first
        # and the write commits before its own session is told to stop: then it is whole.
        if failed is not None:
            says(
                str(failed),
                "/pg/ledger.md",
                "lost the connection to PostgreSQL (namespace 'default')",
                "retry later",
            )
            assert isinstance(failed, StoreUnavailableError)
        now = "forty" if failed is not None else "fifty"

        async def read() -> str:
            return await ws.read_text("/pg/ledger.md")

        assert await _eventually(read) == f"# Ledger\n\nbalance {now}\n"  # one of them, whole
        hits = (await ws.search("balance", mode="bm25")).hits
        assert [h.snippet for h in hits] == [f"# Ledger\n\nbalance {now}"]

        await ws.write("/pg/ledger.md", "# Ledger\n\nbalance fifty\n")  # the next one works
        assert await read() == "# Ledger\n\nbalance fifty\n"
        hits = (await ws.search("balance", mode="bm25")).hits
        assert [h.snippet for h in hits] == ["# Ledger\n\nbalance fifty"]
    finally:
        await store.close()


def _admin(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")
        for statement in statements:
            conn.execute(statement)


async def test_a_read_only_database_refuses_writes_saying_why_and_recovers(server: Any) -> None:
    # A standby, or a database an operator made read-only: reads go on, writes are refused.
    dsn = server.get_uri()
    first = PostgresStore(dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", first)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        await ws.write("/pg/ledger.md", "# Ledger\n\nbalance forty\n")
    finally:
        await first.close()
    database = psycopg.conninfo.conninfo_to_dict(dsn).get("dbname") or "postgres"
    _admin(dsn, f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    # Sessions started from now on are read-only, as on a standby.
    store = PostgresStore(dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        assert await ws.read_text("/pg/ledger.md") == "# Ledger\n\nbalance forty\n"
        with pytest.raises(StoreError) as caught:
            await ws.write("/pg/ledger.md", "# Ledger\n\nbalance fifty\n")
        says(
            str(caught.value),
            "/pg/ledger.md",
            "the database of this mount is read-only",
            "writes need the primary (ask an operator)",
        )
        assert await ws.read_text("/pg/ledger.md") == "# Ledger\n\nbalance forty\n"
    finally:
        await store.close()
        _admin(dsn, f'ALTER DATABASE "{database}" RESET default_transaction_read_only')
    # Sessions started from now on may write (a failover cuts the old ones likewise).
    store = PostgresStore(dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        await ws.write("/pg/ledger.md", "# Ledger\n\nbalance fifty\n")
        assert await ws.read_text("/pg/ledger.md") == "# Ledger\n\nbalance fifty\n"
    finally:
        await store.close()


async def test_a_role_without_rights_on_the_tables_is_told_to_ask_for_them(server: Any) -> None:
    dsn = server.get_uri()
    owner = PostgresStore(dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", owner)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        await ws.write("/pg/ledger.md", "# Ledger\n\nbalance forty\n")
    finally:
        await owner.close()
    _admin(dsn, "CREATE ROLE clerk LOGIN")
    clerk_dsn = psycopg.conninfo.make_conninfo(dsn, user="clerk")
    store = PostgresStore(clerk_dsn, timeout=PATIENCE)
    ws = Workspace([Mount.of("/pg", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        with pytest.raises(StoreError) as caught:
            await ws.read_text("/pg/ledger.md")
        says(
            str(caught.value),
            "/pg/ledger.md",
            "the database refused this mount's role",
            "grant the role access to the Bastion tables (ask an operator)",
        )
        _admin(dsn, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO clerk")
        _admin(dsn, "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO clerk")
        assert await ws.read_text("/pg/ledger.md") == "# Ledger\n\nbalance forty\n"
    finally:
        await store.close()
