"""The gate of ``Workspace.run``: a command runs only where the policy grants ``execute``
(an operator action: ``*`` in a rule does not grant it). The sandbox itself is
``bastion.sandbox`` (``docs/sandbox.md``)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from bastion.core.errors import PolicyDeniedError
from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.workspace.routing import parse_in

__all__ = ["may_execute"]


_SHOWN = 1024
"""Most characters of a command an audit record keeps."""


def may_execute(
    ctx: GuardContext, cwd: str | VPath, command: Sequence[str] | str = (), name: str = "run"
) -> VPath:
    """``cwd`` parsed, once the policy grants ``ctx``'s principal ``execute`` there; the
    check is its own audited operation (``name``: ``run``, or ``start`` for a background
    process) whose reason names the command, refused with :class:`PolicyDeniedError`."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    shown = shlex.join(argv)
    shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
    with ctx.operation(name, cwd) as op:
        vp = parse_in(op, cwd)
        decision = ctx.decide(Action.EXECUTE, vp)
        if not decision.allowed:
            op.refuse(f"{decision.reason}; command: {shown}")
            raise PolicyDeniedError(
                f"execute on {vp} is not allowed by policy; ask an operator to grant it"
            )
        op.reason = f"allowed; command: {shown}"
    return vp
