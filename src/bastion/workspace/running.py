"""The gate of ``Workspace.run`` and of background processes: a command runs only where the
policy grants ``execute`` (an operator action: ``*`` in a rule does not grant it). The sandbox
itself is ``bastion.sandbox`` (``docs/sandbox.md``)."""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bastion.core.audit import AuditRecord
from bastion.core.errors import PolicyDeniedError
from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.workspace.routing import parse_in

if TYPE_CHECKING:
    from bastion.sandbox.approval import Review
    from bastion.sandbox.background import OutputChunk, Processes, ProcessInfo, Stream
    from bastion.sandbox.egress import Recorder
    from bastion.sandbox.port import SandboxWorkspace
    from bastion.sandbox.result import RunLimits

__all__ = ["ProcessGate", "egress_recorder", "may_execute"]


_SHOWN = 1024
"""Most characters of a command an audit record keeps."""


def may_execute(
    ctx: GuardContext,
    cwd: str | VPath,
    command: Sequence[str] | str = (),
    name: str = "run",
    stdin: str | bytes | None = None,
) -> VPath:
    """``cwd`` parsed, once the policy grants ``ctx``'s principal ``execute`` there; the
    check is its own audited operation (``name``: ``run``, or ``start`` for a background
    process) whose reason names the command and whose size is the input's (``stdin``, never
    kept), refused with :class:`PolicyDeniedError`."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    shown = shlex.join(argv)
    shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
    if stdin:
        size = len(stdin.encode("utf-8") if isinstance(stdin, str) else stdin)
        shown += f"; input: {size} bytes"
    with ctx.operation(name, cwd) as op:
        op.bytes = size if stdin else 0
        vp = parse_in(op, cwd)
        decision = ctx.decide(Action.EXECUTE, vp)
        if not decision.allowed:
            op.refuse(f"{decision.reason}; command: {shown}")
            raise PolicyDeniedError(
                f"execute on {vp} is not allowed by policy; ask an operator to grant it"
            )
        op.reason = f"allowed; command: {shown}"
    return vp


def egress_recorder(ctx: GuardContext, cwd: VPath) -> Recorder:
    """Each request to a command's egress proxy as an audit record: operation ``egress``, the
    command's folder as path, ``host:port`` as target, admitted or refused with why."""

    def record(target: str, allowed: bool, reason: str) -> None:
        who = ctx.principal
        ctx.audit.append(
            AuditRecord(
                time.time(),
                who.id,
                who.tenant,
                "egress",
                str(cwd),
                allowed,
                reason,
                target=target[:_SHOWN],
            )
        )

    return record


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
        review: Review | None = None,
    ) -> ProcessInfo:
        vp = may_execute(ctx, cwd, command, name="start", stdin=stdin)
        return await self.table().start(
            ws,
            _owner(ctx),
            command,
            cwd=vp,
            env=env,
            stdin=stdin,
            timeout=timeout,
            limits=limits,
            review=review,
            record=egress_recorder(ctx, vp),
        )

    async def list(self, ctx: GuardContext) -> list[ProcessInfo]:
        return [] if self._table is None else await self._table.list(_owner(ctx))

    async def read(
        self, ctx: GuardContext, pid: str, *, stream: Stream, offset: int, limit: int
    ) -> OutputChunk:
        return await self.table().read(_owner(ctx), pid, stream=stream, offset=offset, limit=limit)

    async def send(self, ctx: GuardContext, pid: str, data: str | bytes, *, close: bool) -> int:
        """Input to a process, audited (operation ``send``, the process's folder as path, its
        id as target, the bytes given as size and the bytes taken in the reason; the input
        itself is never kept: it may hold anything, a secret included)."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        with ctx.operation("send", "-", f"process {pid}"[:80]) as op:
            op.bytes = len(raw)
            table = self.table()
            info = await table.get(_owner(ctx), pid)
            op.path = info.cwd
            taken = await table.send(_owner(ctx), pid, raw, close=close)
            closed = ", input closed" if close else ""
            op.reason = f"allowed; {len(raw)} bytes given, {taken} taken{closed}"
        return taken

    async def kill(self, ctx: GuardContext, pid: str) -> ProcessInfo:
        return await self.table().kill(_owner(ctx), pid)

    async def write_back(self, ctx: GuardContext, pid: str) -> ProcessInfo:
        return await self.table().write_back(_owner(ctx), pid)

    async def close(self) -> int:
        return 0 if self._table is None else await self._table.close()
