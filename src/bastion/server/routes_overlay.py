"""An overlay mount's review over HTTP (docs/changes.md, "Overlay mounts"): the change list,
the diff, apply, discard. Each answers for the principal of the token, through its workspace
view (its thread's layer when ``thread`` is given): only the changes it may read, and apply or
discard only what it may also write."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.state import state_of
from bastion.workspace.operations.overlay import (
    OverlayChangesParams,
    OverlayChangesResult,
    OverlayDiffResult,
    OverlayOutcomeResult,
    OverlayPathsParams,
)

__all__ = ["ENDPOINTS", "routes"]


@endpoint("overlay_changes", "GET", "/v1/overlay/changes")
async def overlay_changes(request: Request, args: OverlayChangesParams) -> Response:
    """The changes of the overlay at ``prefix`` the principal may read."""
    ws = state_of(request).view(request).with_thread(args.thread)
    found = await ws.overlay(args.prefix).changes()
    return ok(OverlayChangesResult.of(found).model_dump())


@endpoint("overlay_diff", "POST", "/v1/overlay/diff")
async def overlay_diff(request: Request, args: OverlayPathsParams) -> Response:
    """A unified diff of the changes the principal may read against the base."""
    ws = state_of(request).view(request).with_thread(args.thread)
    diff = await ws.overlay(args.prefix).diff(args.paths)
    return ok(OverlayDiffResult(diff=diff).model_dump())


@endpoint("overlay_apply", "POST", "/v1/overlay/apply")
async def overlay_apply(request: Request, args: OverlayPathsParams) -> Response:
    """Write the changes into the base; a file changed there since is a conflict (kept)."""
    ws = state_of(request).view(request).with_thread(args.thread)
    done = await ws.overlay(args.prefix).apply(args.paths)
    return ok(OverlayOutcomeResult.of(done).model_dump())


@endpoint("overlay_discard", "POST", "/v1/overlay/discard")
async def overlay_discard(request: Request, args: OverlayPathsParams) -> Response:
    """Drop the changes from the layer."""
    ws = state_of(request).view(request).with_thread(args.thread)
    done = await ws.overlay(args.prefix).discard(args.paths)
    return ok(OverlayOutcomeResult.of(done).model_dump())


ENDPOINTS: tuple[Endpoint, ...] = (overlay_changes, overlay_diff, overlay_apply, overlay_discard)
routes = [e.route() for e in ENDPOINTS]
