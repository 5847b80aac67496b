"""The store contract lives in the package (``bastion.testing.StoreContract``), so that a
store plug-in can run it too; the stores' test modules here import it by this name."""

from __future__ import annotations

from bastion.testing import StoreContract

__all__ = ["StoreContract"]
