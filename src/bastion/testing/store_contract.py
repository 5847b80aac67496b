"""The store contract, put together from its parts (each a mixin of test methods)."""

from __future__ import annotations

from bastion.testing._contract_files import FileContract
from bastion.testing._contract_load import LoadContract
from bastion.testing._contract_tree import TreeContract

__all__ = ["StoreContract"]


class StoreContract(FileContract, TreeContract, LoadContract):
    """What every :class:`~bastion.Store` must do, checked once. A store's test module
    subclasses it and provides the ``store`` fixture (a fresh, empty store per test).

    The suite covers the seven primitives (stat, read_range, write, delete, list, mkdir,
    rename), the methods derived on the base class (exists, read_all, makedirs, walk,
    copy_file), awkward content and names, and concurrent conditional writers from tasks and
    from threads."""
