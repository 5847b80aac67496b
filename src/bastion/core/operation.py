"""Operations and the per-principal guard context.

Every request is one :class:`Operation`: rate-limited when it opens, audited once when it
closes, whatever happened in between (a refusal, a malformed path, a store failure). A
workspace call (``grep``, say) opens one operation; the primitive calls it makes inside it are
folded into it and not counted again. A primitive called directly on a guarded store, outside
any operation, is its own operation.

:class:`GuardContext` holds what the guard knows about one principal in one workspace, and
remembers its policy decisions: a decision is a pure function of (principal, action, path),
so a path asked about twice is decided once.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token
from types import TracebackType

from bastion.core.audit import AuditRecord, AuditSink, internal_now
from bastion.core.errors import AccessDeniedError, NotFoundError, OperationError
from bastion.core.memo import Memo
from bastion.core.models import Action, Labels
from bastion.core.paths import VPath
from bastion.core.policy import Decision, Policy
from bastion.core.principal import Principal, labels_admit
from bastion.core.ratelimit import RateLimiter

__all__ = [
    "GuardContext",
    "Operation",
    "current_operation",
    "detach",
    "folded",
    "note_refusal",
    "operation_in_progress",
]

_in_operation: ContextVar[Operation | None] = ContextVar("bastion_operation", default=None)

_CACHE_LIMIT = 4096
"""Decisions remembered per principal view; the memory is cleared when it fills up."""

_HIDDEN = "hidden: "
"""How the reason of a refusal for an entry hidden from the principal begins."""

_AUDIT_PATH_CHARS = 1024
"""How much of a raw (unparsed, possibly hostile) path an audit record keeps."""


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
        self._decisions: Memo[tuple[Action, tuple[str, ...]], Decision] = Memo(_CACHE_LIMIT)
        self._blocked: Memo[tuple[str, ...], str | None] = Memo(_CACHE_LIMIT)
        self._admitted: Memo[Labels, bool] = Memo(_CACHE_LIMIT)
        self.mounts_seen: dict[object, str | None] = {}
        """Why the principal sees nothing of a mount, or ``None`` (``core.visibility``)."""

    def operation(
        self, name: str, path: VPath | str, target: VPath | str | None = None
    ) -> Operation:
        return Operation(self, name, path, target)

    def decide(self, action: Action, path: VPath) -> Decision:
        """The policy's decision for this principal (remembered)."""
        key = (action, path.parts)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self.policy.decide(self.principal, action, path, self.roles)
            self._decisions[key] = decision
        return decision

    def allows(self, action: Action, path: VPath) -> bool:
        return self.decide(action, path).allowed

    def blocked(self, path: VPath) -> str | None:
        """The blocked segment of ``path``, if any (remembered)."""
        try:
            return self._blocked[path.parts]
        except KeyError:
            pass
        found = self.policy.limits.blocked(path)
        self._blocked[path.parts] = found
        return found

    def admits(self, labels: Labels) -> bool:
        """Whether ``labels`` admit the principal (remembered: labels are values)."""
        known = self._admitted.get(labels)
        if known is None:
            known = labels_admit(labels, self.principal, self.roles, self.policy.classifications)
            self._admitted[labels] = known
        return known


class Operation:
    """One audited, rate-limited operation. Nested operations are folded into the outer one.

    Use it as a context manager (``with`` or ``async with``). ``path`` and ``target`` may be
    raw strings while the request is being parsed; :meth:`name_paths` records the parsed form.
    """

    __slots__ = (
        "_ctx",
        "_nested",
        "_start",
        "_token",
        "bytes",
        "name",
        "path",
        "reason",
        "target",
    )

    def __init__(
        self,
        ctx: GuardContext,
        name: str,
        path: VPath | str,
        target: VPath | str | None = None,
    ) -> None:
        self._ctx = ctx
        self.name = name
        self.path = path
        self.target = target
        self.reason = ""
        self.bytes = 0
        self._nested = False
        self._start = 0.0
        self._token: Token[Operation | None] | None = None

    @property
    def context(self) -> GuardContext:
        """The guard context (principal, policy) the operation runs for."""
        return self._ctx

    def refuse(self, reason: str) -> None:
        """Record the real reason of a refusal (for the audit log, not the caller)."""
        outer = _in_operation.get()
        if outer is not None:
            outer.reason = reason
        self.reason = reason

    def name_paths(self, path: VPath, target: VPath | None = None) -> None:
        """Record the parsed path (and target) instead of the raw input."""
        self.path = path
        if target is not None:
            self.target = target

    def __enter__(self) -> Operation:
        outer = _in_operation.get()
        if outer is not None:
            self._nested = True
            return outer
        self._token = _in_operation.set(self)
        self._start = time.perf_counter()
        limiter = self._ctx.limiter
        if limiter is not None:
            try:
                limiter.check(self._ctx.principal)
            except OperationError as exc:
                self._finish(allowed=False, reason=f"rate limited: {exc}")
                _in_operation.reset(self._token)
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._nested:
            return
        if self._token is not None:
            _in_operation.reset(self._token)
        if exc is None:
            reason = self.reason or "allowed"
            # an entry found hidden on the way (exists, a walk) is not the caller's to know
            told = "allowed" if reason.startswith(_HIDDEN) else None
            self._finish(allowed=True, reason=reason, told=told)
            return
        answered = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, OperationError):
            detach(exc)
        if isinstance(exc, AccessDeniedError | NotFoundError) and self.reason:
            self._finish(allowed=False, reason=self.reason, told=answered)
        else:
            self._finish(allowed=False, reason=answered)

    async def __aenter__(self) -> Operation:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def _finish(self, *, allowed: bool, reason: str, told: str | None = None) -> None:
        ctx = self._ctx
        ctx.audit.append(
            AuditRecord(  # in field order, by position: faster than by keyword
                time.time(),
                ctx.principal.id,
                ctx.principal.tenant,
                self.name,
                _audit_path(self.path),
                allowed,
                reason,
                self.bytes,
                (time.perf_counter() - self._start) * 1000.0,
                None if self.target is None else _audit_path(self.target),
                None if told == reason else told,
                internal_now(),  # a check made on a principal's behalf (``on_behalf``)
            )
        )


class _Folded:
    """What a nested operation is: the outer one, entered and left without a trace."""

    __slots__ = ()

    def __enter__(self) -> Operation:
        return current_operation()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


_FOLDED = _Folded()


def folded() -> _Folded | None:
    """The stand-in for a nested operation when one is in progress, else ``None``: a caller
    inside an operation need not build (and name) a new one that would be folded anyway."""
    return _FOLDED if _in_operation.get() is not None else None


def detach(exc: BaseException) -> None:
    """``exc`` as the caller is told it, with nothing of how it was decided: no chained error
    (``raise ... from None`` still keeps the store's own error, naming store paths and what is
    there, as ``__context__``), and no frames below the operation (a hidden entry and a missing
    one are answered by different lines of the guard, which a printed traceback would show).
    The audit record keeps the real reason."""
    exc.__cause__ = None
    exc.__context__ = None
    exc.__suppress_context__ = True
    exc.__traceback__ = None


def operation_in_progress() -> Operation | None:
    """The operation in progress, or ``None`` outside any."""
    return _in_operation.get()


def current_operation() -> Operation:
    """The operation in progress (every guard check runs inside one)."""
    op = _in_operation.get()
    if op is None:  # pragma: no cover - every check runs inside an operation
        raise RuntimeError("guard check outside an operation")
    return op


def note_refusal(reason: str) -> None:
    """Record the real reason of a refusal on the operation in progress, if there is one."""
    op = _in_operation.get()
    if op is not None:
        op.reason = reason


def _audit_path(path: VPath | str) -> str:
    if isinstance(path, VPath):
        return str(path)
    return path if len(path) <= _AUDIT_PATH_CHARS else path[: _AUDIT_PATH_CHARS - 3] + "..."
