"""Audit records and the append-only sink port (an in-memory sink lives here too).

A record's text is always exportable: a character that UTF-8 cannot carry (a lone surrogate,
from a hostile request or from an OS name decoded with ``surrogateescape``) is kept as its
backslash escape (``\\udc80``), whoever builds the record and whichever sink stores it, so
one record can never make a whole window of the log unreadable (:func:`exportable`).

A check a part makes on a principal's behalf (an entry looked up to shape an answer, not a
request of the principal) is written with :attr:`AuditRecord.internal` set: open it inside
:func:`on_behalf`. Operators read such records; the principal's own view of the log does not
list them.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "AuditRecord",
    "AuditSink",
    "MemoryAuditSink",
    "NullAuditSink",
    "exportable",
    "internal_now",
    "on_behalf",
]

_TEXT_FIELDS = ("principal", "tenant", "operation", "path", "reason", "target", "told")

_internal: ContextVar[bool] = ContextVar("bastion_audit_internal", default=False)


def exportable(text: str) -> str:
    """``text`` with every character UTF-8 cannot encode (lone surrogates) written as its
    backslash escape; ``text`` itself when it has none (the common case costs one scan)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@contextlib.contextmanager
def on_behalf() -> Iterator[None]:
    """Operations opened in this block are checks made on a principal's behalf: their
    records are :attr:`~AuditRecord.internal` (read by operators, not listed to the
    principal)."""
    token = _internal.set(True)
    try:
        yield
    finally:
        _internal.reset(token)


def internal_now() -> bool:
    """True inside :func:`on_behalf`."""
    return _internal.get()


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One operation, allowed or refused. Never holds file content."""

    time: float
    """Wall-clock time (seconds since the epoch) when the operation started."""
    principal: str
    tenant: str
    operation: str
    path: str
    allowed: bool
    reason: str
    bytes: int = 0
    duration_ms: float = 0.0
    target: str | None = None
    """Second path of copy and move."""
    told: str | None = None
    """What the caller was answered, where :attr:`reason` says more than that (a refusal's
    true reason; an entry hidden from the caller). A principal reading its own records (an
    :class:`~bastion.core.audit_sinks.AuditView` without the ``audit`` action) reads this as the
    reason, so its records tell no more than its answers did: a hidden document's record reads
    as a missing one's. ``None``: the reason is what the caller was told."""
    internal: bool = False
    """A check made on the principal's behalf (:func:`on_behalf`), not its request: listed to
    operators only."""

    def __post_init__(self) -> None:
        text = f"{self.principal}{self.tenant}{self.operation}{self.path}{self.reason}"
        if text.isascii() and f"{self.target}{self.told}".isascii():
            return  # the common case: one scan of the text
        for name in _TEXT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str) and not value.isascii():
                object.__setattr__(self, name, exportable(value))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AuditSink(ABC):
    """Where audit records go. Append-only: there is no way to change or remove a record."""

    @abstractmethod
    def append(self, record: AuditRecord) -> None: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (files, connections)."""


class NullAuditSink(AuditSink):
    """Discards records (benchmarks only; a workspace audits by default)."""

    def append(self, record: AuditRecord) -> None:
        return None


class MemoryAuditSink(AuditSink):
    """Keeps records in a list; thread-safe. Read them with :attr:`records`."""

    def __init__(self) -> None:
        self._records: list[AuditRecord] = []
        self._lock = threading.Lock()

    def append(self, record: AuditRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> tuple[AuditRecord, ...]:
        with self._lock:
            return tuple(self._records)
