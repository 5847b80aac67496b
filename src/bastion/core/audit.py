"""Audit records and the append-only sink port (an in-memory sink lives here too)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["AuditRecord", "AuditSink", "MemoryAuditSink", "NullAuditSink"]


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
