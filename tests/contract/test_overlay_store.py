"""OverlayStore against the shared store contract: over an empty base, and over a base that
holds other files (the layer's answers must be a store's answers either way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.core.paths import VPath
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.overlay import OverlayStore

from .store_contract import StoreContract


class TestOverlayOverMemory(StoreContract):
    @pytest.fixture
    def store(self) -> OverlayStore:
        return OverlayStore(MemoryStore(), MemoryStore())


class TestOverlayOverAFolder(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> OverlayStore:
        (tmp_path / "base").mkdir()
        (tmp_path / "layer").mkdir()
        return OverlayStore(LocalStore(tmp_path / "base"), LocalStore(tmp_path / "layer"))


def test_the_manifest_name_is_reserved() -> None:
    assert str(VPath.parse("/.bastion-overlay.json")) == "/.bastion-overlay.json"
