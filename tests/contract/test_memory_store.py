"""MemoryStore against the shared store contract."""

from __future__ import annotations

import pytest

from bastion.stores.memory import MemoryStore

from .store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()
