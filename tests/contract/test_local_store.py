"""LocalStore against the shared store contract (its own checks live in tests/unit and
tests/security)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion.stores.local import LocalStore

from .store_contract import StoreContract


class TestLocalStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[LocalStore]:
        store = LocalStore(tmp_path / "root", create=True)
        yield store
        store.close()


class TestLocalStoreWithoutOpenat2(StoreContract):
    """The same contract when the kernel offers no ``openat2`` (every read walks)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[LocalStore]:
        store = LocalStore(tmp_path / "root", create=True)
        store._openat2 = None
        yield store
        store.close()
