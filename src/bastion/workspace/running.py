"""The gate of ``Workspace.run`` and of background processes: a command runs only where the
policy grants ``execute`` (an operator action: ``*`` in a rule does not grant it). The sandbox
itself is ``bastion.sandbox`` (``docs/sandbox.md``)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bastion.core.errors import PolicyDeniedError
from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.workspace.routing import parse_in

if TYPE_CHECKING:
    from bastion.sandbox.background import OutputChunk, Processes, ProcessInfo, Stream
    from bastion.sandbox.port import SandboxWorkspace
    from bastion.sandbox.result import RunLimits

__all__ = ["ProcessGate", "may_execute"]


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


def _owner(ctx: GuardContext) -> tuple[str, str]:
    return (ctx.principal.tenant, ctx.principal.id)


class ProcessGate:
    """The background processes of one workspace, shared by its principal views
    (``bastion.sandbox.background``, made on first use). Starting one is the ``execute`` check
    of ``run`` (audited as ``start``, naming the command); every other call acts on the asking
    principal's own processes only (another's answers "not found")."""

    def __init__(self) -> None:
        self._table: Processes | None = None

    def table(self) -> Processes:
        if self._table is None:
            from bastion.sandbox.background import Processes

            self._table = Processes()
        return self._table

    async def start(
        self,
        ws: SandboxWorkspace,
        ctx: GuardContext,
        command: Sequence[str] | str,
        *,
        cwd: str | VPath,
        env: Mapping[str, str] | None,
        stdin: str | bytes | None,
        timeout: float,
        limits: RunLimits | None,
    ) -> ProcessInfo:
        vp = may_execute(ctx, cwd, command, name="start")
        return await self.table().start(
            ws, _owner(ctx), command, cwd=vp, env=env, stdin=stdin, timeout=timeout, limits=limits
        )

    async def list(self, ctx: GuardContext) -> list[ProcessInfo]:
        return [] if self._table is None else await self._table.list(_owner(ctx))

    async def read(
        self, ctx: GuardContext, pid: str, *, stream: Stream, offset: int, limit: int
    ) -> OutputChunk:
        return await self.table().read(_owner(ctx), pid, stream=stream, offset=offset, limit=limit)

    async def send(self, ctx: GuardContext, pid: str, data: str | bytes, *, close: bool) -> int:
        return await self.table().send(_owner(ctx), pid, data, close=close)

    async def kill(self, ctx: GuardContext, pid: str) -> ProcessInfo:
        return await self.table().kill(_owner(ctx), pid)

    async def write_back(self, ctx: GuardContext, pid: str) -> ProcessInfo:
        return await self.table().write_back(_owner(ctx), pid)

    async def close(self) -> int:
        return 0 if self._table is None else await self._table.close()
