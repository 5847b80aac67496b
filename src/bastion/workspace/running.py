"""The gate of ``Workspace.run``: a command runs only where the policy grants ``execute``
(an operator action: ``*`` in a rule does not grant it). The sandbox itself is
``bastion.sandbox`` (``docs/sandbox.md``)."""

from __future__ import annotations

from bastion.core.errors import PolicyDeniedError
from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.workspace.routing import parse_in

__all__ = ["may_execute"]


def may_execute(ctx: GuardContext, cwd: str | VPath) -> VPath:
    """``cwd`` parsed, once the policy grants ``ctx``'s principal ``execute`` there; the
    check is its own audited ``run`` operation, refused with :class:`PolicyDeniedError`."""
    with ctx.operation("run", cwd) as op:
        vp = parse_in(op, cwd)
        decision = ctx.decide(Action.EXECUTE, vp)
        if not decision.allowed:
            op.refuse(decision.reason)
            raise PolicyDeniedError(
                f"execute on {vp} is not allowed by policy; ask an operator to grant it"
            )
    return vp
