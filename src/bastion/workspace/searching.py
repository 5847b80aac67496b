"""The knowledge half of :class:`~bastion.Workspace`: ``search``, ``index_directory`` and
``rebuild_index``, plus the hooks that keep the index in step with every change."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bastion.core.errors import ConfigurationError, PolicyDeniedError
from bastion.core.models import Action
from bastion.core.operation import Operation
from bastion.core.paths import VPath
from bastion.core.sidecars import labelled_file_of
from bastion.workspace.base import WorkspaceBase

if TYPE_CHECKING:
    from bastion.knowledge.hits import SearchResult
    from bastion.workspace.knowledge import IndexSummary, KnowledgeLink

__all__ = ["SearchMixin"]

Progress = Callable[[int, int, str], None]


class SearchMixin(WorkspaceBase):
    """Mixed into :class:`~bastion.Workspace`."""

    _knowledge: KnowledgeLink | None
    _owner: bool
    """True for a workspace built without a principal: its owner, who may run operator
    tasks without a policy rule (a view for a principal needs the rule)."""

    def _link(self) -> KnowledgeLink:
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
        mode: str = "hybrid",
        k: int = 10,
        min_score: float | None = None,
        filter: Mapping[str, Any] | None = None,
        path: str | VPath = "/",
        related: bool = False,
    ) -> SearchResult:
        """The ``k`` best chunks for ``query`` that this principal may read.

        ``mode`` is ``bm25``, ``vector`` or ``hybrid`` (a keyword-only index offers ``bm25``
        only); ``path`` limits the search to a directory; ``filter`` takes ``tags``,
        ``section``, ``date_from``, ``date_to``, ``doc_ids`` and ``classifications``;
        ``min_score`` drops weaker hits (scores are on the mode's own scale); ``related=True``
        adds, flagged, the documents one relation away from the hits.
        """
        link = self._link()
        if k < 0:
            raise ValueError("k must be non-negative")
        with self._op("search", path) as op:
            vp = self._parse(op, path)
            result = await link.search(
                self._ctx,
                query,
                mode=mode,
                k=k,
                min_score=min_score,
                path=vp,
                options=filter,
                related=related,
            )
            op.bytes = len(result.hits)
            return result

    async def index_directory(
        self, path: str | VPath = "/", *, progress: Progress | None = None
    ) -> IndexSummary:
        """Index every file under ``path`` that this principal can see (files already
        indexed are refreshed); ``progress(done, total, path)`` is called after each file."""
        link = self._link()
        with self._op("index", path) as op:
            vp = self._parse(op, path)
            files = (
                [vp]
                if (await self._stat(vp)).is_file
                else [e.path async for e in self._walk(vp, None) if e.is_file]
            )
            return await link.index_paths(files, self._ctx.policy.classifications, progress)

    async def rebuild_index(self, *, progress: Progress | None = None) -> IndexSummary:
        """Throw the index away and index every file of every readable mount again (recovers
        an index that was lost or is stale). An operator's task: it reads as the system, and
        a principal needs the ``reindex`` action on ``/`` (:class:`PolicyDeniedError`
        otherwise); the summary names only what the principal may read."""
        link = self._link()
        with self._op("rebuild-index", "/") as op:
            self._operator(op, Action.REINDEX, "rebuild_index")
            link.knowledge.index.clear()
            link.failures.clear()
            files = await link.all_files()
            summary = await link.index_paths(files, self._ctx.policy.classifications, progress)
            return self._told(summary)

    async def reindex(self, *, progress: Progress | None = None) -> IndexSummary:
        """Repair the index without starting over: index the files that are missing from it
        or changed since (version or labels), and drop documents whose files are gone. Run it
        when a process starts over an existing index, or after writes that bypassed it (a
        crash between a store write and its index update). An operator's task: it reads as
        the system, and a principal needs the ``reindex`` action on ``/``
        (:class:`PolicyDeniedError` otherwise)."""
        link = self._link()
        with self._op("reindex", "/") as op:
            self._operator(op, Action.REINDEX, "reindex")
            summary = await link.reindex(self._ctx.policy.classifications, progress)
            return self._told(summary)

    def _operator(self, op: Operation, action: Action, task: str) -> None:
        """Refuse ``task`` unless this view is the owner's or the policy grants the principal
        the operator ``action`` on ``/`` (default deny: ``*`` in a rule does not grant it)."""
        if self._owner:
            return
        decision = self._ctx.decide(action, VPath.ROOT)
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
        whose labels are unknown (it could not be read) is not told either."""
        from bastion.knowledge.index.models import DocumentMeta

        link = self._link()

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
            return link.may_read(self._ctx, meta)

        return summary.only(visible)

    async def _changed(self, *paths: VPath) -> None:
        if self._knowledge is not None:
            for vp in paths:
                # A labels sidecar re-labels the file it describes: index that file again.
                await self._knowledge.file_changed(
                    labelled_file_of(vp) or vp, self._ctx.policy.classifications
                )

    async def _removed(self, *paths: VPath) -> None:
        if self._knowledge is not None:
            for vp in paths:
                described = labelled_file_of(vp)
                if described is not None:
                    await self._knowledge.file_changed(described, self._ctx.policy.classifications)
                else:
                    await self._knowledge.path_removed(vp)
