"""The access guard: wraps a store, has the store's interface, decides every call.

A request is allowed only if the mount's scope allows the action, the policy allows the
principal on the full workspace path, no path segment is blocked, and the document's labels
admit the principal. What the principal may not read is reported as *not found* and never
appears in a listing; a scope refusal is reported plainly, since the agent needs to know.

Every operation is rate-limited and audited once. A workspace call (``grep``, say) opens one
:class:`Operation`; the primitive calls it makes inside it are not counted again. A primitive
called directly on a guarded store, outside any operation, is its own operation.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType

from bastion.core.audit import AuditRecord, AuditSink
from bastion.core.errors import (
    AccessDeniedError,
    LimitError,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.models import Action, EntryKind, FileInfo, Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.ports import Store
from bastion.core.principal import Principal, labels_admit
from bastion.core.ratelimit import RateLimiter

__all__ = ["GuardContext", "GuardedStore", "Operation"]

_in_operation: ContextVar[Operation | None] = ContextVar("bastion_operation", default=None)


class GuardContext:
    """Everything the guard needs to know about one principal in one workspace."""

    def __init__(
        self,
        principal: Principal,
        policy: Policy,
        audit: AuditSink,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.principal = principal
        self.policy = policy
        self.audit = audit
        self.limiter = limiter
        self.roles = policy.effective_roles(principal)

    def operation(
        self, name: str, path: VPath | str, target: VPath | str | None = None
    ) -> Operation:
        return Operation(self, name, str(path), None if target is None else str(target))

    def allows(self, action: Action, path: VPath) -> bool:
        return self.policy.decide(self.principal, action, path, self.roles).allowed

    def admits(self, labels: Labels) -> bool:
        return labels_admit(labels, self.principal, self.roles, self.policy.classifications)


class Operation:
    """One audited, rate-limited operation. Nested operations are folded into the outer one."""

    __slots__ = ("_ctx", "_nested", "_start", "_token", "bytes", "name", "path", "reason", "target")

    def __init__(self, ctx: GuardContext, name: str, path: str, target: str | None) -> None:
        self._ctx = ctx
        self.name = name
        self.path = path
        self.target = target
        self.reason = ""
        self.bytes = 0
        self._nested = False
        self._start = 0.0
        self._token: object = None

    def refuse(self, reason: str) -> None:
        """Record the real reason of a refusal (for the audit log, not the caller)."""
        outer = _in_operation.get()
        if outer is not None:
            outer.reason = reason
        self.reason = reason

    async def __aenter__(self) -> Operation:
        outer = _in_operation.get()
        if outer is not None:
            self._nested = True
            return outer
        self._token = _in_operation.set(self)
        self._start = time.perf_counter()
        if self._ctx.limiter is not None:
            try:
                self._ctx.limiter.check(self._ctx.principal)
            except OperationError as exc:
                self._finish(allowed=False, reason=f"rate limited: {exc}")
                _in_operation.reset(self._token)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._nested:
            return
        _in_operation.reset(self._token)  # type: ignore[arg-type]
        if exc is None:
            self._finish(allowed=True, reason=self.reason or "allowed")
        elif isinstance(exc, AccessDeniedError | NotFoundError) and self.reason:
            self._finish(allowed=False, reason=self.reason)
        else:
            self._finish(allowed=False, reason=f"{type(exc).__name__}: {exc}")

    def _finish(self, *, allowed: bool, reason: str) -> None:
        ctx = self._ctx
        self._ctx.audit.append(
            AuditRecord(
                time=time.time(),
                principal=ctx.principal.id,
                tenant=ctx.principal.tenant,
                operation=self.name,
                path=self.path,
                allowed=allowed,
                reason=reason,
                bytes=self.bytes,
                duration_ms=(time.perf_counter() - self._start) * 1000.0,
                target=self.target,
            )
        )


@dataclass(frozen=True, slots=True)
class _Refusal:
    reason: str
    error: OperationError


class GuardedStore(Store):
    """A store seen through the guard, for one mount and one principal."""

    def __init__(self, store: Store, mount: Mount, ctx: GuardContext) -> None:
        self.inner = store
        self.mount = mount
        self.ctx = ctx
        self.kind = store.kind

    def describe(self) -> str:
        return self.inner.describe()

    # -- checks ------------------------------------------------------------------------------

    def _full(self, path: VPath) -> VPath:
        return self.mount.prefix.join(path)

    def _scope(self, action: Action, path: VPath) -> None:
        scope = self.mount.scope
        if not scope.allows(action):
            kind = scope.value.replace("_", "-")
            raise ScopeError(
                f"{self._full(path)}: mount {self.mount.prefix} is {kind}; "
                f"{action.value} is not allowed there"
            )

    def _labels(self, info: FileInfo | None) -> Labels:
        if info is not None and info.labels is not None:
            return info.labels
        return self.mount.labels

    def _visibility(self, path: VPath, kind: EntryKind | None, info: FileInfo | None) -> str | None:
        """Why ``path`` is hidden from the principal, or ``None`` when it is visible."""
        full = self._full(path)
        blocked = self.ctx.policy.limits.blocked(full)
        if blocked is not None:
            return f"blocked segment {blocked!r}"
        action = Action.LIST if kind is EntryKind.DIRECTORY else Action.READ
        decision = self.ctx.policy.decide(self.ctx.principal, action, full, self.ctx.roles)
        if not decision.allowed:
            return decision.reason
        if not self.ctx.admits(self._labels(info)):
            return "labels do not admit the principal"
        return None

    def _hide(self, path: VPath, why: str, op: Operation | None = None) -> NotFoundError:
        reason = f"hidden: {why}"
        (op or _current()).refuse(reason)
        return NotFoundError(f"{self._full(path)} not found")

    def _policy(self, action: Action, path: VPath) -> None:
        full = self._full(path)
        decision = self.ctx.policy.decide(self.ctx.principal, action, full, self.ctx.roles)
        if not decision.allowed:
            _current().refuse(decision.reason)
            why = f" ({decision.public_reason})" if decision.public_reason else ""
            raise PolicyDeniedError(f"{action.value} on {full} is not allowed by policy{why}")

    def _writable_target(self, path: VPath, *, is_file: bool) -> None:
        full = self._full(path)
        limits = self.ctx.policy.limits
        blocked = limits.blocked(full)
        if blocked is not None:
            _current().refuse(f"blocked segment {blocked!r}")
            raise LimitError(f"{full}: the name {blocked!r} is blocked by policy; use another path")
        if is_file and not limits.extension_allowed(full):
            allowed = ", ".join(sorted(e or "(none)" for e in limits.allowed_extensions or ()))
            _current().refuse("extension not allowed")
            raise LimitError(
                f"{full}: extension {full.suffix or '(none)'} not allowed; use {allowed}"
            )
        self._policy(Action.WRITE, path)

    async def _check_tree(self, path: VPath, verb: str) -> None:
        """Refuse when any entry under ``path`` may not be deleted or seen (names not told)."""
        async for info in self.inner.walk(path):
            hidden = self._visibility(info.path, info.kind, info)
            if hidden is None and self.ctx.allows(Action.DELETE, self._full(info.path)):
                continue
            _current().refuse(
                f"protected descendant {self._full(info.path)}: {hidden or 'delete denied'}"
            )
            raise PolicyDeniedError(
                f"cannot {verb} {self._full(path)}: it contains entries you may not {verb}"
            )

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        async with self.ctx.operation("stat", self._full(path)) as op:
            if not (self.mount.scope.allows(Action.READ) or self.mount.scope.allows(Action.LIST)):
                self._scope(Action.READ, path)
            early = self.ctx.policy.limits.blocked(self._full(path))
            if early is not None:
                raise self._hide(path, f"blocked segment {early!r}", op)
            info = await self.inner.stat(path)
            hidden = self._visibility(path, info.kind, info)
            if hidden is not None:
                raise self._hide(path, hidden, op)
            return info

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        async with self.ctx.operation("read", self._full(path)) as op:
            self._scope(Action.READ, path)
            info = None
            hidden = self._visibility(path, EntryKind.FILE, None)
            if hidden is None and getattr(self.inner, "keeps_labels", False):
                info = await self.inner.stat(path)
                hidden = self._visibility(path, EntryKind.FILE, info)
            if hidden is not None:
                raise self._hide(path, hidden, op)
            data = await self.inner.read_range(path, offset, length)
            op.bytes += len(data)
            return data

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        async with self.ctx.operation("write", self._full(path)) as op:
            self._scope(Action.WRITE, path)
            self._writable_target(path, is_file=True)
            limit = self.ctx.policy.limits.max_file_bytes
            size = len(data)
            if mode is WriteMode.APPEND and self.mount.scope.allows(Action.READ):
                with contextlib.suppress(NotFoundError):
                    size += (await self.inner.stat(path)).size
            if size > limit:
                op.refuse(f"size {size} over limit {limit}")
                raise LimitError(
                    f"{self._full(path)}: {size} bytes is over the {limit}-byte file limit; "
                    "write a smaller file"
                )
            info = await self.inner.write(path, data, mode=mode, if_version=if_version)
            op.bytes += len(data)
            return info

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        async with self.ctx.operation("delete", self._full(path)) as op:
            self._scope(Action.DELETE, path)
            if path.is_root:
                op.refuse("delete of a mount root")
                raise PolicyDeniedError(
                    f"{self.mount.prefix} is a mount point and cannot be deleted"
                )
            info = await self._stat_visible(path, op)
            self._policy(Action.DELETE, path)
            if recursive and info.is_dir:
                await self._check_tree(path, "delete")
            await self.inner.delete(path, recursive=recursive)

    async def list(self, path: VPath) -> list[FileInfo]:
        async with self.ctx.operation("list", self._full(path)) as op:
            self._scope(Action.LIST, path)
            if not path.is_root:
                await self._stat_visible(path, op)
            else:
                hidden = self._visibility(path, EntryKind.DIRECTORY, None)
                if hidden is not None:
                    raise self._hide(path, hidden, op)
            entries = await self.inner.list(path)
            return [e for e in entries if self._visibility(e.path, e.kind, e) is None]

    async def mkdir(self, path: VPath) -> None:
        async with self.ctx.operation("mkdir", self._full(path)):
            self._scope(Action.WRITE, path)
            self._writable_target(path, is_file=False)
            await self.inner.mkdir(path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        async with self.ctx.operation("move", self._full(src), self._full(dst)) as op:
            self._scope(Action.DELETE, src)
            info = await self._stat_visible(src, op)
            self._policy(Action.DELETE, src)
            self._writable_target(dst, is_file=info.is_file)
            if info.is_dir:
                await self._check_tree(src, "move")
            await self.inner.rename(src, dst)

    async def _stat_visible(self, path: VPath, op: Operation) -> FileInfo:
        blocked = self.ctx.policy.limits.blocked(self._full(path))
        if blocked is not None:
            raise self._hide(path, f"blocked segment {blocked!r}", op)
        info = await self.inner.stat(path)
        hidden = self._visibility(path, info.kind, info)
        if hidden is not None:
            raise self._hide(path, hidden, op)
        return info

    # -- derived operations that need a raw view ---------------------------------------------

    def visible(self, info: FileInfo) -> bool:
        """Whether a store entry may be shown to the principal (used by bulk operations)."""
        return self._visibility(info.path, info.kind, info) is None


def _current() -> Operation:
    op = _in_operation.get()
    if op is None:  # pragma: no cover - every check runs inside an operation
        raise RuntimeError("guard check outside an operation")
    return op
