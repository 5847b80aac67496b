"""The change journal's operations: the change list, a diff, undo, revert, checkpoints
(docs/changes.md). Their results are built from the journal's records by ``of``."""

from __future__ import annotations

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    StoreError,
)
from bastion.workspace.journal import Change, Checkpoint, Rollback
from bastion.workspace.operations.base import Operation, Params, Result
from bastion.workspace.operations.knowledge import NoParams

__all__ = [
    "CHANGE_OPERATIONS",
    "ChangeOut",
    "ChangesResult",
    "CheckpointOut",
    "CheckpointsResult",
    "DiffResult",
    "RollbackResult",
]

_NAME = Field(
    min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$", description="A checkpoint's name"
)


class ChangesParams(Params):
    thread: str | None = Field(None, max_length=200, description="Only this thread's changes")
    since: float | None = Field(None, ge=0, description="Only changes from this time (epoch s)")
    principal: str | None = Field(None, max_length=200, description="Only this principal's changes")
    after: int | None = Field(None, ge=0, description="Only changes after this id")
    limit: int = Field(1000, ge=1, le=10_000, description="Most changes in the page")


class ChangeParams(Params):
    change: int = Field(ge=1, description="A change's id (from the change list)")


class RevertParams(Params):
    thread: str = Field(min_length=1, max_length=200, description="The thread to take back")


class CheckpointParams(Params):
    name: str = _NAME


class RestoreParams(Params):
    checkpoint: str = _NAME


class EntryOut(Result):
    path: str
    before: str | None
    """``file``, ``dir`` or ``None`` (nothing there)."""
    after: str | None


class ChangeOut(Result):
    id: int
    at: float
    principal: str
    thread: str | None
    op: str
    entries: list[EntryOut]

    @classmethod
    def of(cls, change: Change) -> ChangeOut:
        return cls(
            id=change.id,
            at=change.at,
            principal=change.principal,
            thread=change.thread,
            op=change.op,
            entries=[
                EntryOut(path=e.path, before=e.before.kind, after=e.after.kind)
                for e in change.entries
            ],
        )


class ChangesResult(Result):
    changes: list[ChangeOut]


class DiffResult(Result):
    change: int
    diff: str


class RollbackResult(Result):
    changes: list[int]
    restored: list[str]
    removed: list[str]

    @classmethod
    def of(cls, done: Rollback) -> RollbackResult:
        return cls(
            changes=list(done.changes), restored=list(done.restored), removed=list(done.removed)
        )


class CheckpointOut(Result):
    name: str
    change_id: int
    at: float
    principal: str

    @classmethod
    def of(cls, cp: Checkpoint) -> CheckpointOut:
        return cls(name=cp.name, change_id=cp.change_id, at=cp.at, principal=cp.principal)


class CheckpointsResult(Result):
    checkpoints: list[CheckpointOut]


_READ = (NotFoundError, ConfigurationError, RateLimitError, StoreError)
_UNDO = (*_READ, ConflictError, AccessDeniedError)

CHANGE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="changes",
        summary="The changes you may see, oldest first",
        params=ChangesParams,
        result=ChangesResult,
        errors=_READ,
        facade=("changes",),
    ),
    Operation(
        name="diff",
        summary="What one change did, as a unified diff per file",
        params=ChangeParams,
        result=DiffResult,
        errors=_READ,
        facade=("diff",),
    ),
    Operation(
        name="undo",
        summary="Take one change back (a conflict if a file changed since)",
        params=ChangeParams,
        result=RollbackResult,
        errors=_UNDO,
        facade=("undo",),
    ),
    Operation(
        name="undo_last",
        summary="Take back your own last change",
        params=NoParams,
        result=RollbackResult,
        errors=_UNDO,
        facade=("undo_last",),
    ),
    Operation(
        name="revert",
        summary="Take back every change of a thread",
        params=RevertParams,
        result=RollbackResult,
        errors=_UNDO,
        facade=("revert",),
    ),
    Operation(
        name="checkpoint",
        summary="Name this point of the change journal",
        params=CheckpointParams,
        result=CheckpointOut,
        errors=(*_READ, ConflictError),
        facade=("checkpoint",),
    ),
    Operation(
        name="checkpoints",
        summary="The checkpoints, oldest first",
        params=NoParams,
        result=CheckpointsResult,
        errors=_READ,
        facade=("checkpoints",),
    ),
    Operation(
        name="restore",
        summary="Take back every change made after a checkpoint",
        params=RestoreParams,
        result=RollbackResult,
        errors=_UNDO,
        facade=("restore",),
    ),
)
