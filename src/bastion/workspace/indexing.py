"""The workspace side of knowledge, shared by every principal view: keep the index in step
with the files (:class:`IndexFollower` takes each view's changes to it), and search it for
one principal with the access filter pushed down into the index and re-checked on every hit.

The indexer reads files through the mount's own store (it works for the system, so that every
principal's search sees the same index); what leaves a search is filtered for the asker.
Files on write-only mounts are not indexed: nobody may read them.

The index may lag the files: another process wrote them, or a process died between its store
write and its index update. So before every search the index takes in other processes' index
writes (:meth:`~bastion.knowledge.index.port.Index.refresh`), and every hit is checked against
its file (one ``stat`` per document hit): a hit whose file changed (version or labels) since it
was indexed is indexed again and the search run once more, a hit whose file is gone is dropped
from the index, and a hit whose file cannot be reached is left out of this answer. No hit points
at content its file no longer has, nor carries labels the file no longer has.

The search itself and the checks of its hits are :class:`~bastion.workspace.hitcheck.HitChecks`
(the link holds one and hands it the repair of stale documents).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bastion.core.errors import BastionError, NotFoundError
from bastion.core.models import FileInfo, Labels, Scope
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.workspace.hitcheck import HitChecks, indexed_mount, stale

if TYPE_CHECKING:
    from bastion.core.guard import GuardContext
    from bastion.core.mounts import MountTable
    from bastion.core.principal import Classifications
    from bastion.knowledge.engine import FileToIndex, Knowledge
    from bastion.knowledge.index.models import DocumentMeta
    from bastion.knowledge.indexer import IndexProgress

__all__ = ["IndexFollower", "IndexSummary", "KnowledgeLink"]

_BATCH_FILES = 512
"""Files per indexing batch: each batch is one embedding call and one index write, and a
LanceDB write has a fixed cost whatever its size, so fewer, larger batches index faster."""
_BATCH_BYTES = 32 << 20
"""A batch closes once its files hold this many bytes (memory stays bounded on big files)."""


@dataclass(kw_only=True, slots=True)
class IndexSummary:
    """What an indexing run did."""

    indexed: int = 0
    chunks: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    """Path -> why it was not indexed (unsupported type, parse error, too large...)."""
    seconds: float = 0.0
    unchanged: int = 0
    """Files already indexed at their current version (``reindex`` leaves them alone)."""
    removed: int = 0
    """Indexed documents whose files are gone (``reindex`` drops them)."""
    outcomes: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    """Path -> (``indexed`` / ``unchanged`` / ``removed`` / ``skipped``, chunks)."""
    labels: dict[str, Labels] = field(default_factory=dict, repr=False)
    """Path -> the file's labels (for removed files, what the index held): who may hear of it."""

    def only(self, visible: Callable[[str], bool]) -> IndexSummary:
        """The part of this summary about the paths ``visible`` admits (counts recomputed):
        an index run reads as the system, its caller hears only of what it may see."""
        out = IndexSummary(seconds=self.seconds)
        for path, (outcome, chunks) in self.outcomes.items():
            if not visible(path):
                continue
            out.outcomes[path] = (outcome, chunks)
            if outcome == "indexed":
                out.indexed += 1
                out.chunks += chunks
            elif outcome == "unchanged":
                out.unchanged += 1
            elif outcome == "removed":
                out.removed += 1
            elif path in self.skipped:
                out.skipped[path] = self.skipped[path]
        return out

    def format(self) -> str:
        head = f"indexed {self.indexed} files ({self.chunks} chunks), skipped {len(self.skipped)}"
        if self.unchanged or self.removed:
            head += f", unchanged {self.unchanged}, removed {self.removed}"
        lines = [f"{head} in {self.seconds:.1f} s"]
        lines += [f"  skipped {path}: {why}" for path, why in sorted(self.skipped.items())]
        return "\n".join(lines)


class KnowledgeLink:
    """Ties one :class:`Knowledge` to a workspace's mounts (shared by every principal view)."""

    def __init__(self, knowledge: Knowledge, mounts: MountTable) -> None:
        self.knowledge = knowledge
        self.mounts = mounts
        self.failures: dict[str, str] = {}
        """Files that could not be indexed on their last change, and why."""
        self.checks = HitChecks(knowledge, mounts, self._repair)
        """The searches and the checks of their hits (what they remember is theirs)."""

    # -- following the files -----------------------------------------------------------------

    def follow(self) -> None:
        """Take in what other processes wrote to a shared index (cheap when nothing)."""
        self.knowledge.index.refresh()

    async def file_changed(self, vp: VPath, classifications: Classifications) -> None:
        """Re-index the file (or every file of the directory) now at ``vp``. Never raises for
        a file it cannot index, nor when the index itself fails (its disk full, its server
        down): the file was written, and saying otherwise would make the caller write it
        again (an append twice). The reason is kept in :attr:`failures`; searches leave the
        stale hits out and index the file again once the index works."""
        mount = indexed_mount(self.mounts, vp)
        if mount is None:
            return
        store, rel = mount.store, mount.to_store_path(vp)
        try:
            info = await store.stat(rel)
        except NotFoundError:
            await self.path_removed(vp)
            return
        if info.is_file:
            files = [vp]
        else:
            files = [mount.prefix.join(e.path) async for e in store.walk(rel) if e.is_file]
        try:
            await self.index_paths(files, classifications)
        except BastionError as exc:
            for file in files:
                self.failures[str(file)] = f"index update failed: {exc}"

    async def index_paths(
        self,
        paths: Sequence[VPath],
        classifications: Classifications,
        progress: Callable[[int, int, str], None] | None = None,
        *,
        batch: int = _BATCH_FILES,
        segments: Callable[[IndexProgress], None] | None = None,
    ) -> IndexSummary:
        """Index these files (workspace paths) in batches of up to ``batch`` files and
        :data:`_BATCH_BYTES` bytes; ``progress(done, total, path)`` after each batch,
        ``segments(IndexProgress)`` after each segment of a large file."""

        started = time.perf_counter()
        summary = IndexSummary()
        self.follow()
        paths = [vp for vp in paths if labelled_file_of(vp) is None]  # sidecars label, not teach
        todo: list[FileToIndex] = []
        dropped: list[str] = []
        size = 0
        for done, vp in enumerate(paths, 1):
            item = await self._load(vp)
            if isinstance(item, str):
                summary.skipped[str(vp)] = item
                summary.outcomes[str(vp)] = ("skipped", 0)
                self.failures.pop(str(vp), None)
                dropped.append(str(vp))
            else:
                todo.append(item)
                size += len(item.data)
                summary.labels[item.path] = item.labels
            if len(todo) + len(dropped) < batch and size < _BATCH_BYTES and done < len(paths):
                continue
            await self._index_batch(todo, dropped, classifications, summary, segments)
            todo, dropped, size = [], [], 0
            if progress is not None:
                progress(done, len(paths), str(vp))
        if len(paths) > 1:  # a load: the work its first search would do, done now, once
            await asyncio.to_thread(self.knowledge.index.prepare)
        summary.seconds = time.perf_counter() - started
        return summary

    async def _index_batch(
        self,
        todo: list[FileToIndex],
        dropped: list[str],
        classifications: Classifications,
        summary: IndexSummary,
        segments: Callable[[IndexProgress], None] | None,
    ) -> None:
        """One batch: the files that will not be indexed forgotten, the others indexed in one
        ``Knowledge.index_files`` call (one embedding call, one index write)."""
        await self.knowledge.remove_many(dropped)
        results = await self.knowledge.index_files(
            todo, classifications=classifications, progress=segments
        )
        for item, result in zip(todo, results, strict=True):
            if isinstance(result, BaseException):
                summary.skipped[item.path] = str(result)
                summary.outcomes[item.path] = ("skipped", 0)
                self.failures[item.path] = str(result)
            else:
                summary.indexed += 1
                summary.chunks += result
                summary.outcomes[item.path] = ("indexed", result)
                self.failures.pop(item.path, None)

    async def _load(self, vp: VPath) -> FileToIndex | str:
        """The file, ready to index, or why it will not be indexed."""
        from bastion.knowledge.engine import FileToIndex

        mount = indexed_mount(self.mounts, vp)
        if mount is None:
            return "on a write-only mount or under no mount"
        rel = mount.to_store_path(vp)
        limit = self.knowledge.limits.max_bytes

        def small(info: FileInfo) -> None:
            if info.size > limit:
                raise _TooLarge

        try:
            # one read: the labels and the bytes they were worked out from
            info, data = await mount.store.read_file(rel, check=small)
        except _TooLarge:
            return f"over the {limit}-byte ingest limit"
        except BastionError as exc:
            return str(exc)
        if info.labels is not None and info.labels.undetermined:
            return "labels cannot be determined"
        if not self.knowledge.indexable(str(vp), data):
            return "unsupported type (not text, Markdown, HTML, PDF or DOCX)"
        labels = info.labels if info.labels is not None else mount.labels
        return FileToIndex(str(vp), data, labels, info.version, resolved=True)

    async def all_files(self) -> list[VPath]:
        """Every file of every mount that can be indexed (for a rebuild)."""
        return list(await self._files())

    async def _files(self) -> dict[VPath, FileInfo]:
        found: dict[VPath, FileInfo] = {}
        for mount in self.mounts.mounts:
            if mount.scope is Scope.WRITE_ONLY:
                continue
            async for entry in mount.store.walk():
                full = mount.prefix.join(entry.path)
                if entry.is_file and self.mounts.find(full) is mount:
                    found[full] = entry
        return found

    async def reindex(
        self,
        classifications: Classifications,
        progress: Callable[[int, int, str], None] | None = None,
        *,
        segments: Callable[[IndexProgress], None] | None = None,
    ) -> IndexSummary:
        """Bring the index in step with the files: index what is missing or changed since it
        was indexed (version or labels), drop documents whose files are gone. This repairs a
        write that reached its store but not the index (a crash between the two, a process
        that writes without this index)."""
        started = time.perf_counter()
        self.follow()
        files = await self._files()
        indexed = {meta.path: meta for meta in self.knowledge.index.documents().values()}
        todo: list[VPath] = []
        documents = 0
        for vp, info in files.items():
            if labelled_file_of(vp) is not None:
                continue
            documents += 1
            meta = indexed.get(str(vp))
            if meta is None or stale(meta, info, strict=True):
                todo.append(vp)
        gone = [path for path in indexed if VPath.parse(path) not in files]
        await self.knowledge.remove_many(gone)
        for path in gone:
            self.failures.pop(path, None)
        summary = await self.index_paths(todo, classifications, progress, segments=segments)
        summary.unchanged = documents - len(todo)
        summary.removed = len(gone)
        redo = set(todo)
        for vp, info in files.items():
            if vp not in redo and labelled_file_of(vp) is None:
                summary.outcomes[str(vp)] = ("unchanged", 0)
                if info.labels is not None:
                    summary.labels[str(vp)] = info.labels
        for path in gone:
            summary.outcomes[path] = ("removed", 0)
            summary.labels[path] = indexed[path].labels
        summary.seconds = time.perf_counter() - started
        return summary

    async def path_removed(self, vp: VPath) -> None:
        """Forget the file at ``vp``, or every indexed file under it (a directory: the only
        case that scans the index's document list). An index that fails is noted in
        :attr:`failures`, not raised (see :meth:`file_changed`)."""
        try:
            await self._forget(vp)
        except BastionError as exc:
            self.failures[str(vp)] = f"index update failed: {exc}"

    async def _forget(self, vp: VPath) -> None:
        path = str(vp)
        self.failures.pop(path, None)
        self.follow()
        if await self.knowledge.remove(path):
            return
        prefix = path.rstrip("/") + "/"
        gone = [
            m.path for m in self.knowledge.index.documents().values() if m.path.startswith(prefix)
        ]
        for doc in gone:
            self.failures.pop(doc, None)
        await self.knowledge.remove_many(gone)

    # -- searching ---------------------------------------------------------------------------

    def may_read(self, ctx: GuardContext, meta: DocumentMeta) -> bool:
        """See :meth:`HitChecks.may_read`."""
        return self.checks.may_read(ctx, meta)

    async def _repair(self, stale: Mapping[VPath, str], classifications: Classifications) -> bool:
        """Index these documents as their files are now; False when the index failed (the
        stale hits are then only left out)."""
        changed = [vp for vp, why in stale.items() if why == "changed"]
        try:
            for vp, why in stale.items():
                if why == "gone":
                    await self._forget(vp)
            if changed:
                await self.index_paths(changed, classifications)
        except BastionError as exc:
            for vp in stale:
                self.failures[str(vp)] = f"index update failed: {exc}"
            return False
        return True


class IndexFollower:
    """Takes one view's changes to the index: a file written, copied, moved or deleted is
    indexed again or forgotten. Does nothing for a workspace without an index."""

    def __init__(self, link: KnowledgeLink | None, classifications: Classifications) -> None:
        self._link = link
        self._classifications = classifications

    async def changed(self, *paths: VPath) -> None:
        """These paths (files or trees) were written."""
        if self._link is not None:
            for vp in paths:
                # A labels sidecar re-labels the file it describes: index that file again.
                await self._link.file_changed(labelled_file_of(vp) or vp, self._classifications)

    async def removed(self, *paths: VPath) -> None:
        """These paths (files or trees) are gone."""
        if self._link is not None:
            for vp in paths:
                described = labelled_file_of(vp)
                if described is not None:
                    await self._link.file_changed(described, self._classifications)
                else:
                    await self._link.path_removed(vp)


class _TooLarge(Exception):
    """A file over the ingest limit, found before its bytes are read."""
