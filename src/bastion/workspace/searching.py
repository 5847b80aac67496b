"""Search and indexing for one principal: ``search``, ``index_directory``, and the operator
tasks ``rebuild_index`` and ``reindex``. The index follows every change through
:class:`~bastion.workspace.indexing.IndexFollower`; ``ask`` is in ``asking``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bastion.core.errors import ConfigurationError, PolicyDeniedError
from bastion.core.guard import GuardContext
from bastion.core.models import Action
from bastion.core.operation import Operation
from bastion.core.paths import VPath
from bastion.workspace.hitcheck import SearchView
from bastion.workspace.modes import search_mode
from bastion.workspace.routing import Router, parse_in

if TYPE_CHECKING:
    from bastion.knowledge.hits import SearchResult
    from bastion.knowledge.indexer import IndexProgress
    from bastion.workspace.indexing import IndexSummary, KnowledgeLink

__all__ = ["Searching"]

Progress = Callable[[int, int, str], None]
Segments = Callable[["IndexProgress"], None]
"""Told after each segment of a large file is in the index (see ``Knowledge.index_files``)."""


class Searching:
    """The index as one principal may use it (through ``router``, whose guard it shares)."""

    def __init__(self, link: KnowledgeLink | None, router: Router, *, owner: bool) -> None:
        self._knowledge = link
        self._router = router
        self.ctx: GuardContext = router.ctx
        self._view: SearchView | None = None
        """This view's memory of its searches (made at the first)."""
        self._owner = owner
        """True for a workspace built without a principal: its owner, who may run operator
        tasks without a policy rule (a view for a principal needs the rule)."""

    def link(self) -> KnowledgeLink:
        """The index link, or :class:`ConfigurationError` when the workspace has none."""
        if self._knowledge is None:
            raise ConfigurationError(
                "this workspace has no knowledge index; pass knowledge=Knowledge(...) "
                "(or Knowledge.open(folder)) to Workspace"
            )
        return self._knowledge

    @property
    def has_index(self) -> bool:
        """True when the workspace keeps a search index."""
        return self._knowledge is not None

    @property
    def search_modes(self) -> tuple[str, ...]:
        """The modes :meth:`search` offers: ``()`` without an index, ``("bm25",)`` for a
        keyword-only index, else ``("bm25", "vector", "hybrid")``."""
        if self._knowledge is None:
            return ()
        return tuple(mode.value for mode in self._knowledge.knowledge.modes)

    async def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 10,
        min_score: float | None = None,
        filter: Mapping[str, Any] | None = None,
        path: str | VPath = "/",
        related: bool = False,
    ) -> SearchResult:
        """The ``k`` best chunks for ``query`` that this principal may read.
        (see :meth:`Workspace.search`)"""
        link = self.link()
        if k < 0:
            raise ValueError("k must be non-negative")
        view = self._view
        if view is None:
            view = self._view = SearchView(self.ctx)
        with self.ctx.operation("search", path) as op:
            vp = parse_in(op, path)
            result = await link.checks.search(
                view,
                query,
                mode=search_mode(mode, self.search_modes),
                k=k,
                min_score=min_score,
                path=vp,
                options=filter,
                related=related,
            )
            op.bytes = len(result.hits)
            return result

    async def index_directory(
        self,
        path: str | VPath = "/",
        *,
        progress: Progress | None = None,
        segments: Segments | None = None,
    ) -> IndexSummary:
        """Index every file under ``path`` that this principal can see (files already indexed are
        refreshed). (see :meth:`Workspace.index_directory`)"""
        link = self.link()
        with self.ctx.operation("index", path) as op:
            vp = parse_in(op, path)
            files = (
                [vp]
                if (await self._router.stat(vp)).is_file
                else [e.path async for e in self._router.walk(vp, None) if e.is_file]
            )
            return await link.index_paths(
                files, self.ctx.policy.classifications, progress, segments=segments
            )

    async def rebuild_index(
        self, *, progress: Progress | None = None, segments: Segments | None = None
    ) -> IndexSummary:
        """Throw the index away and index every file of every readable mount again (recovers an
        index that was lost or is stale). (see :meth:`Workspace.rebuild_index`)"""
        link = self.link()
        with self.ctx.operation("rebuild-index", "/") as op:
            self._operator(op, Action.REINDEX, "rebuild_index")
            link.knowledge.index.clear()
            link.failures.clear()
            files = await link.all_files()
            progress, segments = self._progress(progress, segments)
            summary = await link.index_paths(
                files, self.ctx.policy.classifications, progress, segments=segments
            )
            return self._told(summary)

    async def reindex(
        self, *, progress: Progress | None = None, segments: Segments | None = None
    ) -> IndexSummary:
        """Repair the index without starting over. (see :meth:`Workspace.reindex`)"""
        link = self.link()
        with self.ctx.operation("reindex", "/") as op:
            self._operator(op, Action.REINDEX, "reindex")
            progress, segments = self._progress(progress, segments)
            summary = await link.reindex(
                self.ctx.policy.classifications, progress, segments=segments
            )
            return self._told(summary)

    def _progress(
        self, progress: Progress | None, segments: Segments | None
    ) -> tuple[Progress | None, Segments | None]:
        """An operator's run walks every file as the system: its paths and counts (files it may
        not see among them) are told to the owner's view only; a principal hears its progress
        as a percentage (``progress(percent, 100, "")``) and no segments."""
        if self._owner or progress is None:
            return (progress, segments) if self._owner else (None, None)
        told = progress

        def share(done: int, total: int, _path: str) -> None:
            told(done * 100 // total if total else 100, 100, "")

        return share, None

    def _operator(self, op: Operation, action: Action, task: str) -> None:
        """Refuse ``task`` unless this view is the owner's or the policy grants the principal
        the operator ``action`` on ``/`` (default deny: ``*`` in a rule does not grant it)."""
        if self._owner:
            return
        decision = self.ctx.decide(action, VPath.ROOT)
        if decision.allowed:
            return
        op.refuse(f"{task} needs {action.value}: {decision.reason}")
        raise PolicyDeniedError(
            f"{task} is an operator task: it needs the '{action.value}' action on / in the "
            "policy; ask an operator to run it or to grant it"
        )

    def _told(self, summary: IndexSummary) -> IndexSummary:
        """The summary cut to what this principal may read: the run read every file as the
        system, and neither a path nor a count of a hidden file may reach the caller. A file
        whose labels are unknown (it could not be read) is not told either. The owner's view
        (a workspace built without a principal: whoever holds its configuration, who reads the
        whole audit log too) hears of every file."""
        if self._owner:
            return summary
        from bastion.knowledge.index.models import DocumentMeta

        link = self.link()

        def visible(path: str) -> bool:
            labels = summary.labels.get(path)
            if labels is None:
                return False
            meta = DocumentMeta(
                doc_id="",
                path=path,
                tenant=labels.tenant,
                classification=labels.classification,
                roles=labels.roles,
                tags=labels.tags,
            )
            return link.may_read(self.ctx, meta)

        return summary.only(visible)
