"""Bastion: a governed workspace for AI agents.

One virtual filesystem over several stores mounted under path prefixes; every operation goes
through one access guard that knows who asks, what each mount allows, and how each document
is labelled.
"""

from bastion.core.audit import AuditRecord, AuditSink
from bastion.core.audit_sinks import JsonLinesAuditSink, MemoryAuditSink
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    BastionError,
    ConfigurationError,
    ConflictError,
    EditError,
    InvalidPathError,
    LabelError,
    NoMountError,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    RateLimitError,
    SandboxError,
    ScopeError,
    StoreError,
    StoreUnavailableError,
)
from bastion.core.models import Action, EntryKind, FileInfo, Labels, Scope, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Decision, FileLimits, Policy, RateLimit, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.workspace import (
    EditResult,
    GrepMatch,
    GrepResult,
    SyncWorkspace,
    TextPage,
    Workspace,
)

__all__ = [
    "AccessDeniedError",
    "Action",
    "AlreadyExistsError",
    "Answer",
    "AuditRecord",
    "AuditSink",
    "AuthenticationError",
    "BastionError",
    "ChatModel",
    "Citation",
    "ConfigurationError",
    "ConflictError",
    "Decision",
    "EditError",
    "EditResult",
    "EntryKind",
    "FileInfo",
    "FileLimits",
    "FsspecStore",
    "GrepMatch",
    "GrepResult",
    "GuardrailResult",
    "Guardrails",
    "HttpChatModel",
    "Identity",
    "IdentityConfig",
    "InvalidPathError",
    "JsonLinesAuditSink",
    "JwtVerifier",
    "Knowledge",
    "LabelError",
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
    "PostgresStore",
    "Principal",
    "RateLimit",
    "RateLimitError",
    "Rule",
    "RunLimits",
    "RunResult",
    "SandboxError",
    "Scope",
    "ScopeError",
    "ScopedWorkspace",
    "Scopes",
    "SearchHit",
    "SearchResult",
    "Skill",
    "SkillLibrary",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "SyncWorkspace",
    "TextPage",
    "Toolset",
    "VPath",
    "Workspace",
    "WorkspaceConfig",
    "WriteMode",
    "load_policy",
    "load_workspace",
    "mount_from_url",
    "store_from_url",
]

__version__ = "0.1.0"

_LAZY = {
    "ScopedWorkspace": "bastion.agents.scopes",
    "Scopes": "bastion.agents.scopes",
    "SkillLibrary": "bastion.agents.skills",
    "Skill": "bastion.agents.skills_model",
    "Toolset": "bastion.agents.tools",
    "ChatModel": "bastion.governance.answer.chat",
    "HttpChatModel": "bastion.governance.answer.http_chat",
    "Answer": "bastion.governance.answer.models",
    "Citation": "bastion.governance.answer.models",
    "AuthenticationError": "bastion.governance.errors",
    "GuardrailResult": "bastion.governance.guardrails",
    "Guardrails": "bastion.governance.guardrails",
    "Identity": "bastion.governance.identity",
    "JwtVerifier": "bastion.governance.identity",
    "IdentityConfig": "bastion.governance.identity_config",
    "SearchHit": "bastion.knowledge.hits",
    "SearchResult": "bastion.knowledge.hits",
    "Knowledge": "bastion.knowledge.engine",
    "RunLimits": "bastion.sandbox.result",
    "RunResult": "bastion.sandbox.result",
    "FsspecStore": "bastion.stores.fsspec",
    "PostgresStore": "bastion.stores.postgres",
    "mount_from_url": "bastion.stores.registry",
    "store_from_url": "bastion.stores.registry",
    "SqliteStore": "bastion.stores.sqlite",
    "WorkspaceConfig": "bastion.config",
    "load_policy": "bastion.config",
    "load_workspace": "bastion.config",
}


def __getattr__(name: str) -> object:
    """Knowledge, governance, agent and backend names load on first use, so ``import bastion``
    stays light (no database driver, model runtime or framework is imported by it)."""
    if name in _LAZY:
        import importlib

        from bastion.core.extras import needs

        with needs(f"bastion.{name}"):
            return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bastion' has no attribute {name!r}")
