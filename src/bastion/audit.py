"""Audit sinks. The port and the in-memory sink live in ``bastion.core.audit``."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from bastion.core.audit import AuditRecord, AuditSink, MemoryAuditSink, NullAuditSink
from bastion.core.errors import ConfigurationError

__all__ = ["AuditRecord", "AuditSink", "JsonLinesAuditSink", "MemoryAuditSink", "NullAuditSink"]


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

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
