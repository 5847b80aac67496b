"""An overlay mount's review: the change list, the diff, apply, discard (docs/changes.md, "Overlay
mounts"). The Python facade is ``Workspace.overlay(prefix)`` (a small object of its own,
:class:`~bastion.workspace.overlay.OverlayReview`), whose methods take the parameters below
with the same defaults (``tests/workspace/test_overlay_review.py`` holds them)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    StoreError,
)
from bastion.workspace.operations.base import Operation, Params, Result
from bastion.workspace.overlay import OverlayChange, OverlayOutcome

__all__ = [
    "OVERLAY_OPERATIONS",
    "OverlayChangeOut",
    "OverlayChangesParams",
    "OverlayChangesResult",
    "OverlayDiffResult",
    "OverlayOutcomeResult",
    "OverlayPathsParams",
]


class OverlayChangesParams(Params):
    prefix: str = Field(
        min_length=1,
        max_length=4096,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="The overlay mount's prefix (/code)",
    )
    thread: str | None = Field(
        None, min_length=1, max_length=200, description="That thread's own layer (none: shared)"
    )


class OverlayPathsParams(OverlayChangesParams):
    paths: list[str] | None = Field(
        None, max_length=10_000, description="Only these changed paths (none: all you see)"
    )


class OverlayChangeOut(Result):
    path: str
    action: Literal["write", "delete", "mkdir"]
    status: Literal["added", "modified", "deleted"]
    """What it is over the base now."""
    conflict: bool
    """Apply would keep it in the layer: the base changed there since the layer took it."""

    @classmethod
    def of(cls, change: OverlayChange) -> OverlayChangeOut:
        action: Literal["write", "delete", "mkdir"] = (
            "delete"
            if change.action == "delete"
            else "mkdir"
            if change.action == "mkdir"
            else "write"
        )
        status: Literal["added", "modified", "deleted"] = (
            "deleted"
            if change.status == "deleted"
            else "modified"
            if change.status == "modified"
            else "added"
        )
        return cls(path=change.path, action=action, status=status, conflict=change.conflict)


class OverlayChangesResult(Result):
    changes: list[OverlayChangeOut]

    @classmethod
    def of(cls, changes: list[OverlayChange]) -> OverlayChangesResult:
        return cls(changes=[OverlayChangeOut.of(c) for c in changes])


class OverlayDiffResult(Result):
    diff: str
    """A unified diff, file by file, of the layer against the base."""


class OverlayOutcomeResult(Result):
    applied: list[str]
    conflicts: list[str]
    """Kept in the layer: the base changed there since the layer took the file."""
    discarded: list[str]

    @classmethod
    def of(cls, done: OverlayOutcome) -> OverlayOutcomeResult:
        return cls(
            applied=list(done.applied),
            conflicts=list(done.conflicts),
            discarded=list(done.discarded),
        )


_READ = (NotFoundError, ConfigurationError, RateLimitError, StoreError)
_CHANGE = (*_READ, ConflictError, AccessDeniedError)

OVERLAY_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="overlay_changes",
        summary="The changes an overlay mount's layer holds that you may read",
        params=OverlayChangesParams,
        result=OverlayChangesResult,
        errors=_READ,
    ),
    Operation(
        name="overlay_diff",
        summary="A unified diff of an overlay's changes you may read against its base",
        params=OverlayPathsParams,
        result=OverlayDiffResult,
        errors=_READ,
    ),
    Operation(
        name="overlay_apply",
        summary="Write an overlay's changes into its base (conflicts stay in the layer)",
        params=OverlayPathsParams,
        result=OverlayOutcomeResult,
        errors=_CHANGE,
    ),
    Operation(
        name="overlay_discard",
        summary="Drop an overlay's changes: the base shows through again",
        params=OverlayPathsParams,
        result=OverlayOutcomeResult,
        errors=_CHANGE,
    ),
)
