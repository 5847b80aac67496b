"""What a background process shows its owner: :class:`ProcessInfo`, :class:`OutputChunk`, and
the buffer that keeps the last bytes of each stream with absolute offsets
(``bastion.sandbox.background``)."""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from typing import IO, Literal

__all__ = ["OutputBuffer", "OutputChunk", "ProcessInfo", "Stream", "drain"]

_READ = 65536

Stream = Literal["stdout", "stderr"]


@dataclass(frozen=True, kw_only=True)
class ProcessInfo:
    """A background process as its owner sees it."""

    id: str
    command: str
    """The command as one shell-quoted line (cut to 200 characters)."""
    cwd: str
    state: Literal["running", "exited", "killed"]
    """``running``; ``exited`` on its own (any status); ``killed`` by its owner or a limit."""
    exit_code: int | None = None
    signal: int | None = None
    limit: str | None = None
    """What ended it or held its changes back: ``timeout``, ``written``, ``tmp`` (too many
    entries in ``/tmp``), ``killed`` (its owner, or the workspace closing)."""
    duration: float
    """Seconds since it started, or from start to exit."""
    stdout_bytes: int = 0
    """Bytes it printed on stdout so far (an offset past the last byte)."""
    stderr_bytes: int = 0
    changed: tuple[str, ...] = ()
    """Workspace paths written back so far (created or changed), as the owner."""
    deleted: tuple[str, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)
    """Changes refused or held back, path to one-line reason; not applied."""


@dataclass(frozen=True, kw_only=True)
class OutputChunk:
    """A slice of one stream of a background process."""

    id: str
    stream: Stream
    text: str
    """The bytes from ``offset`` to ``next_offset``, decoded (invalid UTF-8 replaced)."""
    offset: int
    """Byte offset of the first byte of ``text`` (later than asked when earlier bytes were
    no longer kept: see ``skipped``)."""
    next_offset: int
    """Where to read on from."""
    total: int
    """Bytes the stream has carried so far."""
    skipped: int = 0
    """Bytes between the offset asked for and ``offset`` that are no longer kept."""
    running: bool
    """False once the process has ended: nothing more will come after ``total``."""


class OutputBuffer:
    """The last ``cap`` bytes of one stream, with absolute offsets; filled by a thread."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.kept += chunk
            self.total += len(chunk)
            if len(self.kept) > self.cap:
                del self.kept[: len(self.kept) - self.cap]

    def read(self, offset: int, limit: int) -> tuple[bytes, int, int]:
        """(bytes, where they start, total)."""
        with self.lock:
            first = self.total - len(self.kept)
            start = min(max(offset, first), self.total)
            data = bytes(self.kept[start - first : start - first + limit])
            return data, start, self.total


def drain(stream: IO[bytes], out: OutputBuffer) -> None:
    """Read a pipe to its end into ``out``, then close it (a thread per stream)."""
    try:
        fd = stream.fileno()
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _READ):
                out.add(chunk)
    except ValueError:  # closed already
        return
    finally:
        with contextlib.suppress(OSError):
            stream.close()
