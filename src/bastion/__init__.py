"""Bastion: a governed workspace for AI agents.

One virtual filesystem over several stores mounted under path prefixes; every operation goes
through one access guard that knows who asks, what each mount allows, and how each document
is labelled.
"""

from bastion.audit import JsonLinesAuditSink, MemoryAuditSink
from bastion.config import load_policy
from bastion.core.audit import AuditRecord, AuditSink
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    BastionError,
    ConfigurationError,
    ConflictError,
    EditError,
    InvalidPathError,
    NoMountError,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    RateLimitError,
    ScopeError,
)
from bastion.core.models import Action, EntryKind, FileInfo, Labels, Scope, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Decision, FileLimits, Policy, RateLimit, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.workspace import EditResult, GrepMatch, GrepResult, SyncWorkspace, Workspace

__all__ = [
    "AccessDeniedError",
    "Action",
    "AlreadyExistsError",
    "AuditRecord",
    "AuditSink",
    "BastionError",
    "ConfigurationError",
    "ConflictError",
    "Decision",
    "EditError",
    "EditResult",
    "EntryKind",
    "FileInfo",
    "FileLimits",
    "GrepMatch",
    "GrepResult",
    "InvalidPathError",
    "JsonLinesAuditSink",
    "Knowledge",
    "Labels",
    "LocalStore",
    "MemoryAuditSink",
    "MemoryStore",
    "Mount",
    "NoMountError",
    "NotFoundError",
    "OperationError",
    "Policy",
    "PolicyDeniedError",
    "Principal",
    "RateLimit",
    "RateLimitError",
    "Rule",
    "Scope",
    "ScopeError",
    "SearchHit",
    "SearchResult",
    "Store",
    "SyncWorkspace",
    "VPath",
    "Workspace",
    "WriteMode",
    "load_policy",
]

__version__ = "0.1.0"

_LAZY = {
    "Knowledge": "bastion.knowledge.service",
    "SearchHit": "bastion.knowledge.hits",
    "SearchResult": "bastion.knowledge.hits",
}


def __getattr__(name: str) -> object:
    """Knowledge names load on first use, so ``import bastion`` stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bastion' has no attribute {name!r}")
