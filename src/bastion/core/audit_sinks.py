"""Audit sinks, and what one principal may read of them. The port and the in-memory sink live
in ``bastion.core.audit``.

Reading the audit log is an operator action: :class:`AuditView` is what a principal's view of
a workspace shows of the shared sink (``Workspace.audit``): that principal's own records, as
it was told, and none of the checks made on its behalf; or every record of its own tenant
when the policy grants it the ``audit`` action on ``/``. Tenancy is a hard boundary: no
principal reads another tenant's records, whatever the policy grants (the workspace's owner,
a workspace built without a principal, reads the sink itself: every record).

Records are read a page at a time (:func:`audit_page`): the newest ``limit`` before a cursor,
and the cursor of the page before them. A cursor is a position in the (append-only) records
a view shows, so a page stays the same page while records are appended.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from bastion.core.audit import AuditRecord, AuditSink, MemoryAuditSink, NullAuditSink
from bastion.core.errors import ConfigurationError, PolicyDeniedError
from bastion.core.principal import Principal

__all__ = [
    "AuditPage",
    "AuditRecord",
    "AuditSink",
    "AuditView",
    "JsonLinesAuditSink",
    "MemoryAuditSink",
    "NullAuditSink",
    "audit_page",
]


class AuditView(AuditSink):
    """One principal's window on a shared audit sink.

    :attr:`records` holds the principal's own records (same id and tenant), each with the
    reason it was answered (:attr:`AuditRecord.told`), without the checks made on its behalf
    (:attr:`AuditRecord.internal`: they were not its requests, and they may name entries it
    may not see), unless ``everyone`` (the policy grants the principal the ``audit`` action
    on ``/``: the requests of every principal *of its tenant*, each as it was told; another
    tenant's records are never in a principal's view; the true reasons and the checks made
    on a principal's behalf stay in the sink itself, for whoever holds the log file, and
    ``bastion explain`` says why a user may or may not act). Records
    appended through the view go to the shared sink, and only as the view's principal: a
    view cannot write a record in another principal's name.
    """

    def __init__(self, sink: AuditSink, principal: Principal, *, everyone: bool) -> None:
        self._sink = sink
        self.principal = principal
        self.everyone = everyone
        """True when the view reads the records of every principal of its tenant."""

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
        readable = self._tenants if self.everyone else self._readable
        return tuple(_as_told(record) for record in kept if readable(record))

    def _own(self, record: AuditRecord) -> bool:
        return record.principal == self.principal.id and record.tenant == self.principal.tenant

    def _tenants(self, record: AuditRecord) -> bool:
        """A request of a principal of this view's tenant (an operator's view). A tenant kept
        as its escape (``exportable``) would read as a plain tenant that spells the escape, so
        a record whose tenant holds ``\\u`` is the owner's only (fails closed)."""
        return (
            not record.internal
            and record.tenant == self.principal.tenant
            and "\\u" not in record.tenant
        )

    def _readable(self, record: AuditRecord) -> bool:
        """One of the principal's own requests. An id kept as its escape (``exportable``: a
        Python-made id with a lone surrogate) would read as a plain id that spells the
        escape, so a record whose id holds ``\\u`` is for operators only (fails closed)."""
        return self._tenants(record) and self._own(record) and "\\u" not in record.principal


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
        # a record's text always encodes (``bastion.core.audit.exportable``)
        line = (json.dumps(record.to_dict(), ensure_ascii=False, sort_keys=True) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            if self._fsync:
                os.fsync(self._fd)

    @property
    def records(self) -> tuple[AuditRecord, ...]:
        """Every record in the file, oldest first (the whole file is read). A line that is
        not a record (cut short by a crash, written by something else) is skipped; text a
        line holds that UTF-8 cannot carry (a ``\\ud800`` escape written before it was made
        exportable) is read as its backslash escape."""
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


@dataclasses.dataclass(frozen=True, slots=True)
class AuditPage:
    """One page of audit records."""

    records: tuple[AuditRecord, ...]
    """Oldest first: the newest records before the cursor asked for."""
    next: str | None
    """The cursor of the page before this one (older records), ``None`` when there is none."""

    def to_dict(self) -> dict[str, object]:
        return {"records": [r.to_dict() for r in self.records], "next": self.next}


def audit_page(
    records: Sequence[AuditRecord],
    *,
    limit: int | None,
    cursor: str | None = None,
    keep: Callable[[AuditRecord], bool] | None = None,
) -> AuditPage:
    """The newest ``limit`` records (all when ``None``) of ``records`` before ``cursor`` (the
    end when ``None``) that ``keep`` admits, and the cursor of the older ones. A cursor is
    one a previous page of the same records gave; anything else is a :class:`ValueError`."""
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    end = len(records) if cursor is None else _position(cursor, len(records))
    picked: list[AuditRecord] = []
    at = end
    while at > 0 and (limit is None or len(picked) < limit):
        at -= 1
        if keep is None or keep(records[at]):
            picked.append(records[at])
    more = any(keep is None or keep(records[i]) for i in range(at - 1, -1, -1))
    picked.reverse()
    return AuditPage(tuple(picked), str(at) if more else None)


def _position(cursor: str, size: int) -> int:
    if cursor.isascii() and cursor.isdigit() and len(cursor) <= 20 and int(cursor) <= size:
        return int(cursor)
    raise ValueError("not a cursor of this audit log: use the 'next' of a previous page")
