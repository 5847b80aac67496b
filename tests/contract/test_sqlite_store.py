"""SqliteStore against the shared store contract (its own checks live in
tests/stores/test_sqlite_store_extra.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion.stores.sqlite import SqliteStore

from .store_contract import StoreContract


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteStore]:
        store = SqliteStore(tmp_path / "ws.db")
        yield store
        store.close()


class TestSqliteStoreSmallChunks(StoreContract):
    """The same contract with 1 KiB chunks: every range and append crosses many chunks."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteStore]:
        store = SqliteStore(tmp_path / "ws.db", chunk_size=1024)
        yield store
        store.close()
