"""One grep call over the merged tree: the files the principal may read, matched in order.

The files come from the visible tree, worked out once per call (``workspace.visible``); a
single file asked for by name is stat-ed through the guard. Each file is read either by the
local fast lane (``workspace.grep_local``: confined descriptors, in one thread hop per batch,
only under the labels decided for the version read) or through the guard, one read per file;
both give the same bytes to the same matcher, so the answer does not depend on the lane.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bastion.core.errors import (
    IsADirectoryError_,
    LimitError,
    NotADirectoryError_,
    NotFoundError,
    ScopeError,
    UnsupportedFileError,
)
from bastion.core.globs import Glob
from bastion.core.guard import GuardedStore
from bastion.core.models import EntryKind, FileInfo
from bastion.core.operation import Operation
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.labels.store import DocumentLabels
from bastion.workspace.grep import Budget, GrepMatch, GrepResult, LineMatcher, Scan, clip
from bastion.workspace.grep_local import BINARY_SNIFF, FileRead, LocalLane, local_lane, too_big
from bastion.workspace.routing import Router
from bastion.workspace.visible import visible_tree

__all__ = ["GrepCall"]

_GONE = (
    NotFoundError,
    ScopeError,
    UnsupportedFileError,
    IsADirectoryError_,
    NotADirectoryError_,
)
"""What a read of a listed file meets when the principal may not read it, or when it is no
longer a file it can read (gone, or swapped for a link or a folder since the listing, as a
listing leaves links out): the file is skipped silently, as if listed a moment later."""

FIRST_BATCH = 128
"""Files read and matched in the fast lane's first thread hop; each next hop takes four times
as many, up to :data:`MAX_BATCH` (a hop under load costs milliseconds; a call that stops
early, at ``max_total``, has read at most one hop's files past its stop)."""
MAX_BATCH = 2048
BATCH_BYTES = 64 << 20
"""Most bytes (by listed size) one hop reads: what a batch holds in memory at most, with the
lines of the files in it that matched."""


@dataclass
class _Tally:
    """What the call has found so far."""

    matches: list[GrepMatch] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    searched: int = 0
    matched_files: int = 0
    total: int = 0
    truncated: bool = False
    exhausted: bool = False


class GrepCall:
    """One grep: ``matcher`` over the files under ``vp``, within the caps."""

    def __init__(
        self,
        router: Router,
        op: Operation,
        matcher: LineMatcher,
        *,
        context: int,
        glob: str | None,
        max_per_file: int,
        max_total: int,
    ) -> None:
        self._router = router
        self._op = op
        self._matcher = matcher
        self._context = max(context, 0)
        self._glob = Glob.compile(glob if glob.startswith("/") else "/**/" + glob) if glob else None
        self._per_file = max_per_file
        self._max_total = max_total
        self._cap = router.ctx.policy.limits.max_file_bytes
        self._budget = Budget()
        self._lanes: dict[int, LocalLane | None] = {}
        self._tally = _Tally()

    async def run(self, vp: VPath) -> GrepResult:
        info = await self._router.stat(vp)
        single = info.is_file
        files = [info] if single else (await visible_tree(self._router, vp)).files(vp)
        last = files[-1] if files else None
        todo = [e for e in files if self._glob is None or self._glob.matches(e.path)]
        i = hops = 0
        while i < len(todo):
            entry = todo[i]
            if self._out_of_time():
                break
            guarded, rel = self._router.route(entry.path)
            lane = None if single else self._lane(guarded)
            if lane is None:
                i += 1
                read, scan = await self._read_and_scan(guarded, rel, entry)
                if await self._take(guarded, rel, entry, read, scan, last):
                    break
                continue
            batch = [(entry, rel)]
            size, hops = min(FIRST_BATCH << 2 * hops, MAX_BATCH), hops + 1
            held = entry.size if entry.size <= self._cap else 0
            while len(batch) < size and i + len(batch) < len(todo):
                nxt = todo[i + len(batch)]
                held += nxt.size if nxt.size <= self._cap else 0
                if held > BATCH_BYTES:
                    break
                other, nxt_rel = self._router.route(nxt.path)
                if other is not guarded:
                    break
                batch.append((nxt, nxt_rel))
            done, read_bytes = await asyncio.to_thread(
                lane.search, batch, self._matcher, self._budget, self._per_file
            )
            self._op.bytes += read_bytes
            stop = False
            for (entry, rel), searched in zip(batch, done, strict=False):
                i += 1
                got, scan = searched.read, searched.scan
                if got is None:  # the guarded read decides this one
                    if self._out_of_time():
                        stop = True
                        break
                    got, scan = await self._read_and_scan(guarded, rel, entry)
                if await self._take(guarded, rel, entry, got, scan, last):
                    stop = True
                    break
            if stop:
                break
        t = self._tally
        return GrepResult(
            tuple(t.matches),
            t.searched,
            t.matched_files,
            t.truncated or t.exhausted,
            tuple(t.skipped),
            budget_exhausted=t.exhausted,
        )

    def _out_of_time(self) -> bool:
        """Whether the matching budget is spent (the call then stops, flagged)."""
        if self._budget.exhausted:
            self._tally.exhausted = True
        return self._tally.exhausted

    def _lane(self, guarded: GuardedStore) -> LocalLane | None:
        key = id(guarded)
        if key not in self._lanes:
            self._lanes[key] = local_lane(guarded, self._cap)
        return self._lanes[key]

    async def _scan(self, data: bytes) -> Scan:
        matcher = self._matcher
        if matcher.inline(data):
            return matcher.scan(data, self._budget, self._per_file)
        # off the event loop: RE2 releases the GIL, other callers keep running
        return await asyncio.to_thread(matcher.scan, data, self._budget, self._per_file)

    def _absorb(
        self, entry: FileInfo, read: FileRead, scan: Scan | None, last: FileInfo | None
    ) -> bool:
        """Count one file's outcome; whether the call stops here."""
        t = self._tally
        if read.why:
            t.skipped.append(f"{entry.path}: {read.why}")
        if read.data is None or scan is None:
            return False
        t.searched += 1
        lines, hits = scan.lines, scan.hits
        t.exhausted = scan.stopped
        if hits:
            t.matched_files += 1
            if len(hits) > self._per_file:
                hits = hits[: self._per_file]
                t.truncated = True
            room = self._max_total - t.total
            if len(hits) > room:
                hits = hits[:room]
                t.truncated = True
            t.total += len(hits)
            t.matches.extend(_with_context(str(entry.path), lines, hits, self._context))
        if t.exhausted:
            return True
        if t.total >= self._max_total:
            t.truncated = t.truncated or entry is not last
            return True
        return False

    async def _read_and_scan(
        self, guarded: GuardedStore, rel: VPath, entry: FileInfo
    ) -> tuple[FileRead, Scan | None]:
        read = await self._guarded_read(guarded, rel, entry)
        return read, None if read.data is None else await self._scan(read.data)

    async def _take(
        self,
        guarded: GuardedStore,
        rel: VPath,
        entry: FileInfo,
        read: FileRead,
        scan: Scan | None,
        last: FileInfo | None,
    ) -> bool:
        """One file's outcome counted (a file that matched decided on its bytes first);
        whether the call stops here."""
        if scan is not None and scan.hits:
            read, scan = await self._decided_on_bytes(guarded, rel, entry, read, scan)
        return self._absorb(entry, read, scan, last)

    async def _decided_on_bytes(
        self, guarded: GuardedStore, rel: VPath, entry: FileInfo, read: FileRead, scan: Scan
    ) -> tuple[FileRead, Scan | None]:
        """A file with matching lines, decided once more on the labels of the very bytes
        matched (their front matter, the file's sidecar now): a version string cannot tell
        two same-size rewrites in place within one tick of the file's clock apart, so labels
        cached for a version may have been read from other bytes than these. Hidden now:
        skipped silently, as a read the guard refuses."""
        port = guarded.inner
        if (
            type(port) is not DocumentLabels
            or port.inner.keeps_labels
            or read.data is None
            or labelled_file_of(rel) is not None
        ):
            return read, scan
        try:
            labels = await port.prospective(rel, read.data)
        except _GONE:
            return FileRead(None, ""), None
        info = FileInfo(rel, EntryKind.FILE, len(read.data), entry.mtime, None, labels)
        if not guarded.visible(info):
            return FileRead(None, ""), None
        return read, scan

    async def _guarded_read(self, guarded: GuardedStore, rel: VPath, entry: FileInfo) -> FileRead:
        """The bytes of one file read through the guard, or why it is skipped (``""``:
        silently, because the principal may not read it)."""
        cap = self._cap
        why = too_big(cap)

        def small_enough(found: FileInfo) -> None:
            if found.size > cap:
                raise LimitError(why)

        if entry.size > cap:
            return FileRead(None, why)
        try:
            _, data = await guarded.read_file(rel, check=small_enough)
        except LimitError:
            return FileRead(None, why)
        except _GONE:
            return FileRead(None, "")
        if b"\x00" in data[:BINARY_SNIFF]:
            return FileRead(None, "binary")
        return FileRead(data)


def _with_context(path: str, lines: list[str], hits: list[int], context: int) -> list[GrepMatch]:
    hit_set = set(hits)
    shown: list[int] = []
    for i in hits:
        for j in range(max(i - context, 0), min(i + context + 1, len(lines))):
            if not shown or j > shown[-1]:
                shown.append(j)
    return [GrepMatch(path, j + 1, clip(lines[j]), is_context=j not in hit_set) for j in shown]
