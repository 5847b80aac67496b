"""A search for one principal over the workspace's index, and the checks of its hits: the
access filter pushed down into the index, every hit checked again for the principal, and each
hit's file looked at (or vouched for) so that no hit points at content or labels its file no
longer has (see :mod:`bastion.workspace.indexing` for why the index may lag the files).

On a store that can tell when anything in it changed (``Store.change_mark``: a memory store),
a file found current is vouched for until the mark moves, whoever writes; a principal view
keeps, per document, that its principal may read it and the mark its file was vouched for
under (:class:`SearchView`), so a search whose every hit is vouched for looks at no file and
checks each hit with one lookup (:meth:`HitChecks._vouched_hits`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bastion.core.errors import BastionError, NotFoundError
from bastion.core.memo import Memo
from bastion.core.models import Action, EntryKind, FileInfo, Labels, Scope
from bastion.core.paths import VPath
from bastion.core.visibility import why_hidden
from bastion.knowledge.hits import SearchHit
from bastion.knowledge.index.filters import caller_conditions

if TYPE_CHECKING:
    from bastion.core.guard import GuardContext
    from bastion.core.mounts import Mount, MountTable
    from bastion.core.principal import Classifications, Principal
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.hits import SearchResult
    from bastion.knowledge.index.models import (
        DocumentMeta,
        IndexedChunk,
        IndexFilter,
        IndexHit,
    )

__all__ = ["HitChecks", "SearchView", "indexed_mount", "stale"]

_SNIPPET = 300
_MEMO = 200_000
_READERS = 8
"""Principals whose ``may_read`` answers are kept at once (each up to :data:`_MEMO`)."""
_FILTERS = 256
_WAIT = 0.0005
"""A ``stat`` slower than this (seconds) waited for something (a server, a network): hit
checks on that mount are then made concurrently (see :meth:`HitChecks._currents`)."""

Repair = Callable[[Mapping[VPath, str], "Classifications"], Awaitable[bool]]
"""Index these documents as their files are now (path -> ``changed`` or ``gone``); False when
the index failed (:meth:`KnowledgeLink._repair <bastion.workspace.indexing.KnowledgeLink>`)."""


def indexed_mount(mounts: MountTable, vp: VPath) -> Mount | None:
    """The mount whose files at ``vp`` are indexed: ``None`` under no mount or a write-only
    one (nobody may read what it holds)."""
    mount = mounts.find(vp)
    if mount is None or mount.scope is Scope.WRITE_ONLY:
        return None
    return mount


DocPart = tuple[str, str, "str | None", "Labels"]
"""What a hit takes from its document: path, id, title, labels (:func:`_doc_part`)."""
Cleared = tuple["DocumentMeta", "Mount", object, DocPart]
"""A document a view's principal may read, its mount, the change mark of the mount's store
under which its file was vouched for (see :meth:`HitChecks._vouched_hits`), and its
part of a hit (read from the entry, the document itself is not looked at again)."""


class SearchView:
    """What one principal view keeps between its searches (held by its ``Searching``, gone
    with it): the access filter of a search of the whole tree, and the documents it may
    read whose files were vouched for (:data:`Cleared`, by ``id``)."""

    __slots__ = ("cleared", "ctx", "whole")

    def __init__(self, ctx: GuardContext) -> None:
        self.ctx = ctx
        self.cleared: Memo[int, Cleared] = Memo(_MEMO)
        self.whole: IndexFilter | None = None


class HitChecks:
    """Searches of one :class:`Knowledge` for each principal view, and what they remember:
    the ``may_read`` answers, the access filters, the places of indexed paths and the
    documents whose files were vouched for (shared by every view of a workspace)."""

    def __init__(self, knowledge: Knowledge, mounts: MountTable, repair: Repair) -> None:
        self.knowledge = knowledge
        self.mounts = mounts
        self._repair = repair
        self._readable: Memo[Principal, Memo[DocumentMeta, bool]] = Memo(_READERS)
        """may_read answers, per principal. A link serves one workspace (one policy, one mount
        table), so the principal and the document are the whole key."""
        self._token = object()
        """Names this link's access checks in index mask caches: a live object, so a cache
        entry can never be matched by another workspace (``id()`` values can be reused)."""
        self._places: Memo[str, tuple[VPath, Mount | None, VPath]] = Memo(_MEMO)
        """Indexed path -> (its parsed path, its mount, its path in the mount's store): the
        mount table never changes."""
        self._waiting: set[VPath] = set()
        """Prefixes of the mounts whose ``stat`` waits (see :meth:`_currents`)."""
        self._filters: Memo[tuple[GuardContext, VPath], IndexFilter] = Memo(_FILTERS)
        """:meth:`access_filter` without options, per principal view and path: a pure function
        of the two (the view's policy and principal never change)."""
        self._vouched: Memo[DocumentMeta, tuple[Mount, object]] = Memo(_MEMO)
        """Document -> its mount and its store's :meth:`~bastion.core.ports.Store.change_mark`
        when its file was last found to be what the document was indexed from (stores that
        have a mark)."""

    def access_filter(
        self, ctx: GuardContext, path: VPath, options: Mapping[str, Any] | None
    ) -> IndexFilter:
        """The filter for one principal: labels as columns (tenant, clearance, roles), the
        path policy and mount scopes as a cached per-document check, plus the caller's own
        conditions (``knowledge.index.filters``)."""
        if not options:
            key = (ctx, path)
            known = self._filters.get(key)
            if known is None:
                known = self._filters[key] = self._access_filter(ctx, path, None)
            return known
        return self._access_filter(ctx, path, options)

    def _access_filter(
        self, ctx: GuardContext, path: VPath, options: Mapping[str, Any] | None
    ) -> IndexFilter:
        from bastion.knowledge.index.models import IndexFilter

        order = ctx.policy.classifications.order
        clearance = ctx.principal.clearance
        # an unknown clearance admits no classification (fail closed)
        allowed = frozenset(order[: order.index(clearance) + 1] if clearance in order else ())
        base = IndexFilter(
            path_prefix=None if path.is_root else str(path),
            tenant=ctx.principal.tenant,
            classifications=allowed,
            roles=ctx.roles,
            access=lambda meta: self._may_read(ctx, meta),
            access_key=(ctx.principal, self._token),
        )
        if not options:
            return base
        extra = caller_conditions(options)
        if "classifications" in extra:
            extra["classifications"] = extra["classifications"] & base.classifications
        return replace(base, **extra)

    def may_read(self, ctx: GuardContext, meta: DocumentMeta) -> bool:
        """Would the guard let this principal read this document? (scope, blocked segments,
        path policy for read and search, labels). Memoized per principal and document
        metadata: both are immutable, and so are the policy and the mount table."""
        answers = self._readable.get(ctx.principal)
        if answers is None:
            answers = self._readable[ctx.principal] = Memo(_MEMO)
        known = answers.get(meta)
        if known is None:
            known = answers[meta] = self._may_read(ctx, meta)
        return known

    def _reader(self, ctx: GuardContext) -> Callable[[DocumentMeta], bool]:
        """:meth:`may_read` bound to one principal: the post-check of every hit."""
        answers = self._readable.get(ctx.principal)

        def check(meta: DocumentMeta) -> bool:
            known = None if answers is None else answers.get(meta)
            return self.may_read(ctx, meta) if known is None else known

        return check

    def _may_read(self, ctx: GuardContext, meta: DocumentMeta) -> bool:
        """The guard's own answer for the document's file (``core.visibility.why_hidden``,
        under the labels it was indexed with), and the mount's scope and the policy must let
        the principal search there."""
        try:
            vp = VPath.parse(meta.path)
        except BastionError:
            return False
        mount = self.mounts.find(vp)
        if mount is None or not mount.scope.allows(Action.SEARCH):
            return False
        labels = Labels(meta.tenant, meta.classification, meta.roles, meta.tags)
        if why_hidden(ctx, mount, vp, EntryKind.FILE, labels) is not None:
            return False
        return ctx.allows(Action.SEARCH, vp)

    async def search(
        self,
        view: SearchView,
        query: str,
        *,
        mode: str,
        k: int,
        min_score: float | None,
        path: VPath,
        options: Mapping[str, Any] | None,
        related: bool,
    ) -> SearchResult:
        """The ``k`` best chunks for ``query`` that the principal of ``view`` may read (see
        the module docstring: the access filter pushed down, every hit checked again)."""
        from bastion.knowledge.hits import SearchResult

        ctx = view.ctx
        whole = view.whole
        if options or path.parts:
            flt = self.access_filter(ctx, path, options)
        elif whole is None:
            flt = view.whole = self.access_filter(ctx, path, None)
        else:
            flt = whole
        knowledge = self.knowledge
        knowledge.index.refresh()  # other processes' index writes (:meth:`follow`)
        found = await knowledge.search(query, mode=mode, k=k, flt=flt)
        checked: dict[DocumentMeta, bool] = {}
        out = self._vouched_hits(ctx, view.cleared, found, min_score)
        if out is None:  # some hit's file must be looked at
            out = await self._checked_hits(view, found, checked, query, mode, k, flt, min_score)
        if related and out:
            extra = self._related(ctx, out, flt)
            stale = await self._verify([doc for _, doc in extra], checked)
            out += [hit for hit, doc in extra if checked[doc]]
            if stale:
                await self._repair(stale, ctx.policy.classifications)
        return SearchResult(query=query, mode=mode, hits=tuple(out))

    def _vouched_hits(
        self,
        ctx: GuardContext,
        cleared: Memo[int, Cleared],
        found: Sequence[IndexHit],
        min_score: float | None,
    ) -> list[SearchHit] | None:
        """The hits of ``found`` this principal may read, when the file of every one of them
        is vouched for under its store's change mark as it is now (no file to look at: the
        common case on a store with a mark); ``None`` as soon as one is not (then
        :meth:`_checked_hits` decides, looking at the files). The same hits as
        :meth:`_checked_hits` would give: the principal's post-check (:meth:`may_read`)
        first, then the file check, each store's mark read once, in one pass.

        A document both answers came from is remembered by the view, by identity
        (``cleared``, :attr:`SearchView.cleared`): one lookup of an ``int`` per hit, where the
        two answers are two lookups that each hash the metadata in Python. An entry holds its
        document, so its ``id`` names no other object while it is there, and the mark its
        file was vouched for under: a hit is shown from it only while its store's mark is
        that one."""
        kept: list[tuple[IndexedChunk, float, DocPart]] = []
        last: Mount | None = None  # the mount of the last hit, and its mark (read once)
        mark: object | None = None
        marks: dict[int, object | None] | None = None  # other mounts' marks, when several
        for chunk, score in found:
            if min_score is not None and score < min_score:
                continue
            doc = chunk.doc
            entry = cleared.get(id(doc))
            if entry is None or entry[0] is not doc:
                if not self.may_read(ctx, doc):
                    continue
                entry = self._clear(cleared, doc)
                if entry is None:
                    return None
            if entry[1] is not last:
                if last is not None:
                    marks = {} if marks is None else marks
                    marks[id(last)] = mark
                last = entry[1]
                known = _UNREAD if marks is None else marks.get(id(last), _UNREAD)
                mark = last.store.change_mark() if known is _UNREAD else known
            if mark is None:
                return None
            if entry[2] != mark:  # vouched for again since (by any search)?
                entry = self._clear(cleared, doc)
                if entry is None or entry[2] != mark:
                    return None
            kept.append((chunk, score, entry[3]))
        return _hits(kept)

    def _clear(self, cleared: Memo[int, Cleared], doc: DocumentMeta) -> Cleared | None:
        """Remember in a view's ``cleared`` that its principal may read ``doc`` (the caller
        asked) and under which mark its file was last vouched for; ``None`` (nothing kept)
        when it never was."""
        seen = self._vouched.get(doc)
        if seen is None:
            return None
        entry = cleared[id(doc)] = (doc, seen[0], seen[1], _doc_part(doc))
        return entry

    async def _checked_hits(
        self,
        view: SearchView,
        found: list[IndexHit],
        checked: dict[DocumentMeta, bool],
        query: str,
        mode: str,
        k: int,
        flt: IndexFilter,
        min_score: float | None,
    ) -> list[SearchHit]:
        """The hits of ``found`` this principal may read whose files are what they were
        indexed from (each looked at unless vouched for, see :meth:`_verify`). When some
        changed or went, they are indexed again (or forgotten) and the search is made once
        more. The documents shown whose files are vouched for go to the view's memory (the
        next search that meets them need not ask again)."""
        ctx = view.ctx
        may_read = self._reader(ctx)
        for attempt in range(2):
            if attempt:
                found = await self.knowledge.search(query, mode=mode, k=k, flt=flt)
            hits = [
                h
                for h in found
                if (min_score is None or h.score >= min_score) and may_read(h.chunk.doc)
            ]
            stale = await self._verify([h.chunk.doc for h in hits], checked)
            if not stale or attempt:
                break
            # The index lagged the files: index them as they are now, and ask again (once).
            if not await self._repair(stale, ctx.policy.classifications):
                break
        shown = [(c, s, _doc_part(c.doc)) for c, s in hits if checked[c.doc]]
        for chunk, _score, _part in shown:
            if id(chunk.doc) not in view.cleared:
                self._clear(view.cleared, chunk.doc)  # principal checked above (may_read)
        return _hits(shown)

    async def _verify(
        self, metas: Sequence[DocumentMeta], checked: dict[DocumentMeta, bool]
    ) -> dict[VPath, str]:
        """Check each document against its file (one ``stat`` each): record in ``checked``
        whether the hit may be shown; return the documents to repair (path -> ``changed`` or
        ``gone``)."""
        todo: list[DocumentMeta] = []
        marks: dict[int, object | None] = {}
        vouched = self._vouched
        for meta in metas:
            if meta in checked:
                continue
            mount = self._place(meta.path)[1]
            if mount is not None:
                # Read before any stat: a change after this read makes the next mark differ.
                mark = marks.get(id(mount), _UNREAD)
                if mark is _UNREAD:
                    mark = marks[id(mount)] = mount.store.change_mark()
                seen = vouched.get(meta)
                if mark is not None and seen is not None and seen[1] == mark:
                    checked[meta] = True  # nothing in its store changed since it was current
                    continue
            checked[meta] = False  # decided below; also marks it seen
            todo.append(meta)
        found = await self._currents(todo, marks)
        repair: dict[VPath, str] = {}
        for meta, why in zip(todo, found, strict=True):
            checked[meta] = why is None
            if why in ("changed", "gone"):
                repair[self._place(meta.path)[0]] = why
        return repair

    async def _currents(
        self, metas: Sequence[DocumentMeta], marks: Mapping[int, object | None]
    ) -> list[str | None]:
        """:meth:`_current` of each document. One after the other on a mount whose ``stat``
        answers at once (memory, local disk: nothing to overlap, and a task per stat would cost
        more than the stat); concurrently on a mount seen to wait (a database, object storage:
        one round trip for all). A mount is seen to wait when a stat takes over
        :data:`_WAIT`, and stops being so when all its stats of one search took less. A
        document found current is vouched for under its store's mark in ``marks`` (by mount
        ``id``), read before the stat."""
        out: list[str | None] = [None] * len(metas)
        later: list[int] = []
        for i, meta in enumerate(metas):
            mount = self._place(meta.path)[1]
            if mount is not None and mount.prefix in self._waiting:
                later.append(i)
                continue
            started = time.perf_counter()
            out[i] = why = await self._current(meta)
            if mount is not None:
                if time.perf_counter() - started > _WAIT:
                    self._waiting.add(mount.prefix)
                self._vouch(meta, why, mount, marks.get(id(mount)))
        if later:
            started = time.perf_counter()
            found = await asyncio.gather(*(self._current(metas[i]) for i in later))
            for i, why in zip(later, found, strict=True):
                out[i] = why
                mount = self._place(metas[i].path)[1]
                if mount is not None:
                    self._vouch(metas[i], why, mount, marks.get(id(mount)))
            if time.perf_counter() - started <= _WAIT:  # answered at once: measure them again
                for i in later:
                    mount = self._place(metas[i].path)[1]
                    self._waiting.discard(mount.prefix if mount is not None else VPath.ROOT)
        return out

    def _vouch(
        self, meta: DocumentMeta, why: str | None, mount: Mount, mark: object | None
    ) -> None:
        if why is not None or mark is None:
            return
        self._vouched[meta] = (mount, mark)

    def _place(self, path: str) -> tuple[VPath, Mount | None, VPath]:
        """The parsed ``path``, its (readable) mount and its path in the mount's store
        (``path`` itself without a mount), remembered."""
        place = self._places.get(path)
        if place is None:
            vp = VPath.parse(path)
            mount = indexed_mount(self.mounts, vp)
            rel = vp if mount is None else mount.to_store_path(vp)
            place = self._places[path] = (vp, mount, rel)
        return place

    async def _current(self, meta: DocumentMeta) -> str | None:
        """``None`` when the file is still what ``meta`` was indexed from; else ``changed``,
        ``gone`` or ``unreachable`` (a store that fails now: the hit cannot be vouched for)."""
        _vp, mount, rel = self._place(meta.path)
        if mount is None:  # not this workspace's to drop from a shared index
            return "unreachable"
        try:
            info = await mount.store.stat(rel)
        except NotFoundError:
            return "gone"
        except BastionError:
            return "unreachable"
        if not info.is_file:
            return "gone"
        return "changed" if stale(meta, info, strict=False) else None

    def _related(
        self, ctx: GuardContext, hits: list[SearchHit], flt: IndexFilter
    ) -> list[tuple[SearchHit, DocumentMeta]]:
        """One hop along relations from the hits: the first chunk of each related document
        that the filter admits and the principal may read, flagged with the hit it came from."""
        from bastion.knowledge.ingest import stable_doc_id

        seen = {h.path for h in hits}
        extra: list[tuple[SearchHit, DocumentMeta]] = []
        for source in dict.fromkeys(h.path for h in hits):
            for neighbor in self.knowledge.relations.neighbors(source):
                if neighbor.path in seen:
                    continue
                seen.add(neighbor.path)
                chunks = self.knowledge.index.chunks_of(stable_doc_id(neighbor.path))
                if chunks and flt.admits(chunks[0].doc) and self.may_read(ctx, chunks[0].doc):
                    part = _doc_part(chunks[0].doc)
                    hit = replace(_hits([(chunks[0], 0.0, part)])[0], related_to=source)
                    extra.append((hit, chunks[0].doc))
        return extra


_UNREAD = object()
"""No value yet (``None`` is a store's answer: it has no change mark)."""


def stale(meta: DocumentMeta, info: FileInfo, *, strict: bool) -> bool:
    """Was ``meta`` indexed from another version of the file, or with other labels? A document
    indexed without a version (``Knowledge.index_file`` by hand) is compared by labels only,
    unless ``strict`` (``reindex``: index it again to learn its version)."""
    if (strict or meta.version is not None) and meta.version != info.version:
        return True
    return info.labels is not None and meta.labels != info.labels


def _doc_part(doc: DocumentMeta) -> DocPart:
    return (doc.path, doc.doc_id, doc.title, doc.labels)


def _hits(found: Iterable[tuple[IndexedChunk, float, DocPart]]) -> list[SearchHit]:
    """The records of these (chunk, score, its document's part) triples, in order: one
    comprehension, not a call per hit (a search makes ``k`` of them)."""
    hit = SearchHit
    # in field order: path, lines, snippet, score, ids, section, title, labels
    return [
        hit(
            doc[0],
            chunk.start_line,
            chunk.end_line,
            text if len(text := chunk.text) <= _SNIPPET else text[: _SNIPPET - 3] + "...",
            score,
            chunk.chunk_id,
            doc[1],
            chunk.section,
            doc[2],
            doc[3],
        )
        for chunk, score, doc in found
    ]
