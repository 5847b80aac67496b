"""grep's fast lane over a local disk: the visible files read by descriptor, in one thread hop
per batch, each matched only under the labels the guard decided for that exact version.

A read through the guard costs tens of microseconds of Python per file (the guard, the
labels, the timeout wrapper, the store): over thousands of small files that was most of a
grep. The files grep searches come from the visible tree (``workspace.visible``), worked out
once per call, where the guard decided each entry on the labels of the version listed. For a
mount over a local store whose reads are its own, this lane then, in a worker thread:

- opens each file with the store's own confined lookup (``LocalStore.open_confined``:
  ``openat2`` beneath the store's root descriptor, no link followed anywhere on the path, a
  plain file only), never through a path string that a link swapped in could redirect;
- takes the version from ``fstat`` of that descriptor and goes on only when it is the version
  the guard decided on; reads the bytes; and checks the version once more after the read;
- matches them with the same :class:`~bastion.workspace.grep.LineMatcher` as the guarded path,
  under the same budget.

On any doubt (another version, a link or special file in the way, no ``openat2``, a network
filesystem, a sidecar, labels not plainly known, a short read) the file goes back to the
guarded read, which decides it afresh as it always has. So bytes are matched only when they
are of the version whose labels let the principal read them, and the answer (lines, files
searched and skipped) is the guarded path's. Hidden files are not in the visible tree: they
are never opened, counted or named. See docs/grep.md and decision 0096.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bastion.core.guard import GuardedStore
from bastion.core.models import Action, FileInfo, Labels
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.core.timeouts import TimedStore
from bastion.labels.store import DocumentLabels
from bastion.workspace.grep import Budget, LineMatcher, Scan

__all__ = ["BINARY_SNIFF", "FileRead", "LocalLane", "Searched", "local_lane", "too_big"]

BINARY_SNIFF = 8192
"""A file with a NUL byte in its first this many bytes is skipped as binary."""


@runtime_checkable
class _ConfinedOpen(Protocol):
    """What the lane needs of a store: ``LocalStore.open_confined``."""

    def open_confined(self, path: VPath) -> tuple[int, os.stat_result] | None: ...


@dataclass(frozen=True, slots=True)
class FileRead:
    """One file read for grep: its bytes, or ``None`` and why it was skipped (``""``:
    silently, the principal may not read it)."""

    data: bytes | None
    why: str = ""


@dataclass(frozen=True, slots=True)
class Searched:
    """What the lane did with one file: read (and matched, unless skipped), or ``None`` in
    ``read`` when the guarded read must decide it."""

    read: FileRead | None
    scan: Scan | None = None


_FALLBACK = Searched(None)
_READ = FileRead(b"")
"""A file read and matched without a hit: its bytes dropped."""


def too_big(cap: int) -> str:
    """Why a file over the ``cap``-byte limit is skipped: the same words from either lane."""
    return f"over the {cap}-byte size limit"


def version_of(st: os.stat_result) -> str:
    """The local store's version of a file (``stores._fd.version_of``, which the workspace
    may not import): compared with the listed version only, never shown."""
    return "%x-%x-%x-%x" % (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)  # noqa: UP031


def local_lane(guarded: GuardedStore, max_file_bytes: int) -> LocalLane | None:
    """The fast lane for one mount, or ``None`` (the guarded read for all its files): a store
    seen through nothing but the labels and the timeout wrapper, that opens confined, on a
    mount whose scope lets the principal read."""
    if not guarded.mount.scope.allows(Action.READ):
        return None
    store = guarded.inner
    if type(store) is DocumentLabels:
        store = store.inner
    if type(store) is TimedStore:
        store = store.inner
    if store.keeps_labels or not isinstance(store, _ConfinedOpen):
        return None
    return LocalLane(store, max_file_bytes)


class LocalLane:
    """Reads and matches the visible files of one local mount in a worker thread."""

    def __init__(self, store: _ConfinedOpen, max_file_bytes: int) -> None:
        self._store = store
        self._cap = max_file_bytes
        self.too_big = too_big(max_file_bytes)

    def search(
        self,
        batch: Sequence[tuple[FileInfo, VPath]],
        matcher: LineMatcher,
        budget: Budget,
        limit: int,
    ) -> tuple[list[Searched], int]:
        """Each ``(entry, store path)`` read and matched in order, and the bytes read; stops
        (a shorter list) once the budget is spent. Blocking: run it in a worker thread."""
        out: list[Searched] = []
        read_bytes = 0
        for entry, rel in batch:
            if budget.exhausted:
                break
            read = self.read(entry, rel)
            if read is None:
                out.append(_FALLBACK)
                continue
            if read.data is None:
                out.append(Searched(read))
                continue
            read_bytes += len(read.data)
            # the bytes are kept only for a file that matched (its labels are read from them)
            scan = matcher.scan(read.data, budget, limit)
            out.append(Searched(read if scan.hits else _READ, scan))
        return out, read_bytes

    def read(self, entry: FileInfo, rel: VPath) -> FileRead | None:
        """The bytes of the version of ``entry`` the guard decided on, or ``None`` when the
        guarded read must decide."""
        if entry.size > self._cap:
            return FileRead(None, self.too_big)  # as the guarded path: before any open
        if not _plainly_decided(entry):
            return None
        opened = self._store.open_confined(rel)
        if opened is None:
            return None
        fd, st = opened
        try:
            if version_of(st) != entry.version:
                return None  # changed since the listing: decided afresh
            data = _read_all(fd, st.st_size)
            if data is None or version_of(os.fstat(fd)) != entry.version:
                return None  # changed while read
        except OSError:
            return None
        finally:
            os.close(fd)
        if data.find(b"\x00", 0, BINARY_SNIFF) >= 0:
            return FileRead(None, "binary")
        return FileRead(data)


def _plainly_decided(entry: FileInfo) -> bool:
    """Whether the guard's decision on ``entry`` holds for its version as listed: a file with
    a version, labels known plainly (not stale, not undetermined), and not a sidecar."""
    labels = entry.labels
    if entry.version is None or labelled_file_of(entry.path) is not None:
        return False
    return labels is None or (type(labels) is Labels and not labels.undetermined)


def _read_all(fd: int, size: int) -> bytes | None:
    """``size`` bytes from the start of ``fd``, or ``None`` when the file is shorter now."""
    data = os.pread(fd, size, 0)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, got)
        if not more:
            return None
        parts.append(more)
        got += len(more)
    return b"".join(parts)
