"""Fixtures shared by every test package: a real PostgreSQL with pgvector, and a workspace
for ``bastion run``.

``pg_server`` starts one PostgreSQL (``pgserver`` from PyPI, which ships the server binaries
and pgvector) for the whole run, on a Unix socket in a temporary folder, and stops it at the
end. ``pg_dsn`` gives each test a fresh, empty database on it, dropped afterwards. Tests that
must stop or kill PostgreSQL start a private server with ``pg_support.start_private_pg``.

``runnable`` is the starter workspace the command line's ``bastion run`` tests
(``cli/test_cli_run.py``) and their red team (``sandbox/test_sandbox_attacks_cli_run.py``) use.
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


EXECUTE_RULE = (
    '  { effect = "allow", actions = ["execute"], paths = ["/**"], roles = ["editor"] },\n'
)


@pytest.fixture
def runnable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A starter workspace (``bastion init``) whose editors (bob) may run commands and whose
    guests may not, made the working folder; skipped, saying why, where bubblewrap cannot run."""
    from click.testing import CliRunner

    from bastion.cli import main
    from bastion.sandbox import SandboxError
    from bastion.sandbox.bwrap import bwrap_binary

    try:
        bwrap_binary()
    except SandboxError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")
    folder = tmp_path / "ws"
    assert CliRunner().invoke(main, ["init", str(folder)]).exit_code == 0
    config = folder / "bastion.toml"
    text = config.read_text()
    config.write_text(text.replace("rules = [\n", "rules = [\n" + EXECUTE_RULE, 1))
    (folder / "docs" / "a.md").write_text("hello\n")
    monkeypatch.chdir(folder)
    return folder
