"""MemoryStore against the shared store contract."""

from __future__ import annotations

import pytest

from bastion.core.ports import Store
from bastion.stores.memory import MemoryStore

from .store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()


class _DerivedReadFile(MemoryStore):
    """A store that keeps the port's own ``read_file`` (stat, check, read_range)."""

    read_file = Store.read_file


class TestDerivedReadFile(StoreContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return _DerivedReadFile()
