"""Store adapters: each implements the seven primitives of ``bastion.core.ports.Store``."""

from bastion.stores.memory import MemoryStore

__all__ = ["MemoryStore"]
