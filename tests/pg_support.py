"""Starting a PostgreSQL with pgvector for tests (``pgserver`` from PyPI ships the binaries).

Imported by ``tests/conftest.py`` (the shared ``pg_server`` / ``pg_dsn`` fixtures) and by the
tests that stop or kill a server of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def start_private_pg(folder: Path) -> Any:
    """Start a PostgreSQL server of its own in ``folder``; the caller calls ``cleanup()``.

    Keep ``folder`` outside pytest's temporary folder: a server started as root runs as its
    own user, and another pytest run resets that folder's mode under it."""
    import pgserver

    return pgserver.get_server(folder, cleanup_mode="stop")
