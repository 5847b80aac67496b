"""Audit sinks, and what one principal may read of them. The port and the in-memory sink live
in ``bastion.core.audit``.

Reading the audit log is an operator action: :class:`AuditView` is what a principal's view of
a workspace shows of the shared sink (``Workspace.audit``): that principal's own records, or
every record when the policy grants it the ``audit`` action on ``/``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path

from bastion.core.audit import AuditRecord, AuditSink, MemoryAuditSink, NullAuditSink
from bastion.core.errors import ConfigurationError, PolicyDeniedError
from bastion.core.principal import Principal

__all__ = [
    "AuditRecord",
    "AuditSink",
    "AuditView",
    "JsonLinesAuditSink",
    "MemoryAuditSink",
    "NullAuditSink",
]


class AuditView(AuditSink):
    """One principal's window on a shared audit sink.

    :attr:`records` holds the principal's own records (same id and tenant), each with the
    reason it was answered (:attr:`AuditRecord.told`), unless ``everyone`` (the policy grants
    the principal the ``audit`` action on ``/``: every record, true reasons). Records
    appended through the view go to the shared sink, and only as the view's principal: a
    view cannot write a record in another principal's name.
    """

    def __init__(self, sink: AuditSink, principal: Principal, *, everyone: bool) -> None:
        self._sink = sink
        self.principal = principal
        self.everyone = everyone
        """True when the view reads every principal's records."""

    def append(self, record: AuditRecord) -> None:
        if not self._own(record):
            raise PolicyDeniedError(
                f"this audit view writes only records of {self.principal.id!r}; "
                "append through the sink itself"
            )
        self._sink.append(record)

    @property
    def records(self) -> tuple[AuditRecord, ...]:
        """The records this principal may read, oldest first."""
        kept = getattr(self._sink, "records", None)
        if kept is None:
            raise ConfigurationError(
                f"the audit sink {type(self._sink).__name__} cannot be read back; read the "
                "records where it writes them"
            )
        if self.everyone:
            return tuple(kept)
        return tuple(_as_told(record) for record in kept if self._own(record))

    def _own(self, record: AuditRecord) -> bool:
        return record.principal == self.principal.id and record.tenant == self.principal.tenant


def _as_told(record: AuditRecord) -> AuditRecord:
    """``record`` as its own principal may read it: the reason it was answered, not the true
    one (which can tell a hidden entry from a missing one)."""
    if record.told is None:
        return record
    return dataclasses.replace(record, reason=record.told, told=None)


class JsonLinesAuditSink(AuditSink):
    """Appends one JSON object per line to a file opened in append-only mode.

    Each record is written with a single ``write`` on an ``O_APPEND`` descriptor, so lines from
    several threads or processes never interleave. ``fsync=True`` makes each record durable
    before the operation returns (slower).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            raise ConfigurationError(f"cannot open audit log {self.path}: {exc.strerror}") from exc

    def append(self, record: AuditRecord) -> None:
        fields = record.to_dict()
        try:
            line = (json.dumps(fields, ensure_ascii=False, sort_keys=True) + "\n").encode()
        except UnicodeEncodeError:  # a lone surrogate (not text): written as a \u escape
            line = (json.dumps(fields, ensure_ascii=True, sort_keys=True) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            if self._fsync:
                os.fsync(self._fd)

    @property
    def records(self) -> tuple[AuditRecord, ...]:
        """Every record in the file, oldest first (the whole file is read). A line that is
        not a record (cut short by a crash, written by something else) is skipped."""
        found: list[AuditRecord] = []
        with self.path.open("rb") as lines:
            for line in lines:
                try:
                    found.append(AuditRecord(**json.loads(line)))
                except (ValueError, TypeError):
                    continue
        return tuple(found)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
