"""Changes come back through the guard: each one is a normal workspace call made as the
principal (scope, policy, labels, limits, audit and the index all apply), one path at a time.

A write is conditional on the version copied into the view, so a file changed in the workspace
while the command ran is a conflict, not an overwrite; a new file is created only if nobody
created it meanwhile. A refused change is reported per path and not applied; a single write is
all-or-nothing (the store's own atomic write).

A new folder is made with one ``mkdir`` of the deepest new folder on its branch (the workspace
makes the parents), not one per level: each ``mkdir`` of a folder that exists costs the guard a
look into it. The loop yields to the event loop between changes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bastion.core.errors import AlreadyExistsError, ConflictError, NotFoundError, OperationError
from bastion.core.models import WriteMode
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.view import Change

__all__ = ["Applied", "write_back"]

_CONFLICT = "conflict: it changed in the workspace while the command ran; run again"
_EXISTS = (
    "conflict: a file of that name exists in the workspace (created while the command ran); "
    "nothing was overwritten"
)


@dataclass
class Applied:
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


async def write_back(ws: SandboxWorkspace, changes: list[Change]) -> Applied:
    """Apply ``changes`` (from :func:`bastion.sandbox.view.diff`) as ``ws``'s principal."""
    applied = Applied()
    for change in _deepest_folders(changes):
        await asyncio.sleep(0)  # a long write-back leaves the loop to others between calls
        key = change.key
        if change.kind == "refuse":
            applied.refused[key] = change.reason
            continue
        try:
            await _apply(ws, change)
        except ConflictError:
            applied.refused[key] = _CONFLICT
        except AlreadyExistsError:
            applied.refused[key] = _EXISTS
        except OperationError as exc:
            applied.refused[key] = str(exc)
        else:
            if change.kind == "write":
                applied.changed.append(key)
            elif change.kind == "delete":
                applied.deleted.append(key)
    return applied


def _deepest_folders(changes: list[Change]) -> list[Change]:
    """``changes`` without the ``mkdir`` of a folder that a deeper new folder makes anyway."""
    above = {c.path.parent for c in changes if c.kind == "mkdir"}  # all below a new one is new
    return [c for c in changes if c.kind != "mkdir" or c.path not in above]


async def _apply(ws: SandboxWorkspace, change: Change) -> None:
    if change.kind == "mkdir":
        await ws.mkdir(change.path)
    elif change.kind == "write":
        if change.base is None:
            await ws.write(change.path, change.data, mode=WriteMode.CREATE)
        else:
            await ws.write(change.path, change.data, if_version=change.base.version)
    elif change.base is not None:  # a file deleted by the command
        try:
            info = await ws.stat(change.path)
        except NotFoundError:
            return  # gone already: nothing to do
        if change.base.version is not None and info.version != change.base.version:
            raise ConflictError(_CONFLICT)
        await ws.delete(change.path)
    else:  # a folder deleted by the command (its files came first)
        try:
            await ws.delete(change.path)
        except NotFoundError:
            return
