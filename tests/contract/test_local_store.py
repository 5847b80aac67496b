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
