"""Fixtures shared by every test package: a real PostgreSQL with pgvector.

``pg_server`` starts one PostgreSQL (``pgserver`` from PyPI, which ships the server binaries
and pgvector) for the whole run, on a Unix socket in a temporary folder, and stops it at the
end. ``pg_dsn`` gives each test a fresh, empty database on it, dropped afterwards. Tests that
must stop or kill PostgreSQL start a private server with ``pg_support.start_private_pg``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pg_support import start_private_pg


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    # Not under pytest's temporary folder: a second pytest run resets that folder's mode, and
    # a server started as root runs as its own user, which would then lose its data folder.
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-"))
    server = start_private_pg(folder)
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_server: Any) -> Iterator[str]:
    """A DSN for a fresh database (pgvector enabled) that is dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    base = pg_server.get_uri()
    dsn = base.replace("/postgres?", f"/{name}?", 1) if "/postgres?" in base else None
    if dsn is None:
        raise RuntimeError(f"unexpected pgserver URI shape: {base}")
    try:
        yield dsn
    finally:
        pg_server.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';"
        )
        pg_server.psql(f"DROP DATABASE IF EXISTS {name};")
