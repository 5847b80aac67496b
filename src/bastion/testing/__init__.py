"""Test helpers for code that plugs into Bastion. Needs pytest (and pytest-asyncio with
``asyncio_mode = "auto"``, since most checks are coroutines); they are not dependencies of
Bastion itself, and pytest is imported only when a name of this package is first used.

:class:`StoreContract` is the one suite every store passes (Bastion's own stores run it too).
A store of a plug-in distribution (``docs/stores.md``, "Plug in a store") checks itself by
subclassing it and providing a ``store`` fixture: a fresh, empty store per test::

    import pytest
    from bastion.testing import StoreContract

    class TestShelfStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            return ShelfStore(tmp_path / "shelf")

A store that reads document labels out of what it holds sets ``reads_labels = True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bastion.testing.store_contract import StoreContract

__all__ = ["StoreContract"]


def __getattr__(name: str) -> object:
    """``StoreContract`` loads on first use, so ``import bastion.testing`` needs no pytest."""
    if name == "StoreContract":
        from bastion.testing.store_contract import StoreContract

        return StoreContract
    raise AttributeError(f"module 'bastion.testing' has no attribute {name!r}")
