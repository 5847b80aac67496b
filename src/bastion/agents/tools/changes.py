"""Tools over the change journal (docs/changes.md), opt-in: ``Toolset(ws, extra=CHANGE_TOOLS)``.
An agent may undo its own last change (in its thread, when its workspace view has one); it
reviews and takes back nothing of anyone else's (a person does that: the CLI, HTTP, Python)."""

from __future__ import annotations

from bastion.agents.tools.outputs import ok
from bastion.agents.tools.session import ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool, tool

__all__ = ["CHANGE_TOOLS"]


@tool(needs={Capability.READ, Capability.WRITE}, changes=True, operation="undo_last")
async def undo_last_change(s: ToolSession) -> Output:
    """Take back your own last change (a write, edit, delete, move or copy); refused, with
    nothing changed, if a file it touched was changed since. Read files again afterwards."""
    done = await s.workspace.undo_last()
    return ok(changes=list(done.changes), restored=list(done.restored), removed=list(done.removed))


CHANGE_TOOLS: tuple[Tool, ...] = (undo_last_change,)
"""The journal's tools, for ``Toolset(..., extra=CHANGE_TOOLS)``."""
