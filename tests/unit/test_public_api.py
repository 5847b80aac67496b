"""The curated public surface of ``bastion``."""

from __future__ import annotations

import bastion
from bastion.core import errors

EXPECTED = {
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
    "LabelError",
    "JsonLinesAuditSink",
    "JwtVerifier",
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
}


def test_exported_members() -> None:
    assert set(bastion.__all__) == EXPECTED
    for name in bastion.__all__:
        assert getattr(bastion, name) is not None


def test_every_error_has_one_root() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.BastionError), name
    assert issubclass(errors.ScopeError, errors.AccessDeniedError)
    assert issubclass(errors.NotFoundError, errors.OperationError)
    assert not issubclass(errors.ConfigurationError, errors.OperationError)
