"""The curated public surface of ``bastion``."""

from __future__ import annotations

import bastion
from bastion import errors

EXPECTED = {
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
