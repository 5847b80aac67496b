"""The change journal over HTTP (docs/changes.md): the change list, a diff, undo, revert,
checkpoints. Each answers for the principal of the token, through its workspace view: only
the changes it may read, and undo only what it may also write."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.state import state_of
from bastion.workspace.operations.changes import (
    ChangeOut,
    ChangeParams,
    ChangesParams,
    ChangesResult,
    CheckpointOut,
    CheckpointParams,
    CheckpointsResult,
    RestoreParams,
    RevertParams,
    RollbackResult,
)

__all__ = ["ENDPOINTS", "routes"]


@endpoint("changes", "GET", "/v1/changes")
async def changes(request: Request, args: ChangesParams) -> Response:
    """The changes the principal may see, oldest first."""
    ws = state_of(request).view(request)
    found = await ws.changes(
        thread=args.thread,
        since=args.since,
        principal=args.principal,
        after=args.after,
        limit=args.limit,
    )
    return ok(ChangesResult(changes=[ChangeOut.of(c) for c in found]).model_dump())


@endpoint("diff", "GET", "/v1/changes/diff")
async def diff(request: Request, args: ChangeParams) -> Response:
    """What one change did, as a unified diff per file the principal may read."""
    ws = state_of(request).view(request)
    return ok({"change": args.change, "diff": await ws.diff(args.change)})


@endpoint("undo", "POST", "/v1/changes/undo")
async def undo(request: Request, args: ChangeParams) -> Response:
    """Take one change back: 409 (and nothing changed) when a file changed since."""
    ws = state_of(request).view(request)
    return ok(RollbackResult.of(await ws.undo(args.change)).model_dump())


@endpoint("undo_last", "POST", "/v1/changes/undo-last")
async def undo_last(request: Request, _: object) -> Response:
    """Take back the principal's own last change."""
    ws = state_of(request).view(request)
    return ok(RollbackResult.of(await ws.undo_last()).model_dump())


@endpoint("revert", "POST", "/v1/changes/revert")
async def revert(request: Request, args: RevertParams) -> Response:
    """Take back every change of a thread the principal may see (all or nothing)."""
    ws = state_of(request).view(request)
    return ok(RollbackResult.of(await ws.revert(args.thread)).model_dump())


@endpoint("checkpoints", "GET", "/v1/checkpoints")
async def checkpoints(request: Request, _: object) -> Response:
    ws = state_of(request).view(request)
    found = [CheckpointOut.of(c) for c in await ws.checkpoints()]
    return ok(CheckpointsResult(checkpoints=found).model_dump())


@endpoint("checkpoint", "POST", "/v1/checkpoints")
async def checkpoint(request: Request, args: CheckpointParams) -> Response:
    ws = state_of(request).view(request)
    return ok(CheckpointOut.of(await ws.checkpoint(args.name)).model_dump())


@endpoint("restore", "POST", "/v1/checkpoints/restore")
async def restore(request: Request, args: RestoreParams) -> Response:
    """Take back every change (the principal may see) made after a checkpoint."""
    ws = state_of(request).view(request)
    return ok(RollbackResult.of(await ws.restore(args.checkpoint)).model_dump())


ENDPOINTS: tuple[Endpoint, ...] = (
    changes,
    diff,
    undo,
    undo_last,
    revert,
    checkpoints,
    checkpoint,
    restore,
)
routes = [e.route() for e in ENDPOINTS]
