"""The workspace: one virtual filesystem over many mounts, every call guarded and audited.

This is the async API, the real one. ``bastion.SyncWorkspace`` derives a blocking facade from
it mechanically. A workspace is bound to one principal; :meth:`Workspace.with_principal`
gives a view for another principal that shares mounts, policy, audit and rate limits.

:class:`Workspace` is a facade composed of small parts, each with one job, and each public
method delegates to one of them in one line::

    Workspace ─┬─ Router        routing.py    mounts as one tree: route, stat, children, walk
               ├─ FileOps       files.py      stat, exists, reads, write, edit, mkdir, delete
               ├─ TreeOps       tree.py       list, glob, grep
               ├─ Transfers     transfer.py   copy, move (planned, all or nothing)
               ├─ IndexFollower indexing.py   the index follows every change
               ├─ Searching     searching.py  search, index_directory, rebuild_index, reindex
               ├─ Asking        asking.py     ask (retrieval through Workspace.search)
               └─ may_execute   running.py    run's execute gate (then bastion.sandbox)

The parts of one view share its :class:`~bastion.core.guard.GuardContext` (the principal's
guard, rate limiter and audit); what every view shares (mounts, policy, audit sink, limiter,
the knowledge link) is built once here.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from bastion.core.audit import AuditSink, MemoryAuditSink
from bastion.core.audit_sinks import AuditView
from bastion.core.guard import GuardContext
from bastion.core.models import Action, FileInfo, WriteMode
from bastion.core.mounts import Mount, MountTable
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.core.visibility import MountView
from bastion.labels.store import DocumentLabels
from bastion.workspace.asking import ASK_RELEVANCE_FLOOR, Asking
from bastion.workspace.blocking import run_blocking
from bastion.workspace.files import EditResult, FileOps, TextPage
from bastion.workspace.fsmap import filesystem_map
from bastion.workspace.indexing import IndexFollower, KnowledgeLink
from bastion.workspace.journal import ChangeReview, Journal
from bastion.workspace.overlay import OverlayReview, SyncOverlayReview
from bastion.workspace.routing import Router, parse_request
from bastion.workspace.running import egress_recorder, may_execute
from bastion.workspace.searching import Progress, Searching, Segments
from bastion.workspace.shared import Shared, bare
from bastion.workspace.transfer import Transfers
from bastion.workspace.tree import TreeOps

if TYPE_CHECKING:
    from bastion.governance.answer.chat import ChatModel
    from bastion.governance.answer.guardrail_port import GuardrailsPort
    from bastion.governance.answer.models import Answer
    from bastion.governance.answer.rerank import Reranker
    from bastion.governance.answer.verify import Verifier
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.hits import SearchResult
    from bastion.sandbox.approval import Review
    from bastion.sandbox.background import OutputChunk, ProcessInfo, Stream
    from bastion.sandbox.result import RunLimits, RunResult
    from bastion.workspace.grep import GrepResult
    from bastion.workspace.indexing import IndexSummary
    from bastion.workspace.journal import Change, Checkpoint, Rollback

__all__ = ["EditResult", "SyncWorkspace", "TextPage", "Workspace"]


class Workspace:
    """A governed virtual filesystem for one principal.

    >>> from bastion import Workspace, Mount, MemoryStore, Policy
    >>> ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=Policy.allow_all())
    """

    def __init__(
        self,
        mounts: Iterable[Mount] | MountTable,
        *,
        policy: Policy,
        principal: Principal | None = None,
        audit: AuditSink | None = None,
        knowledge: Knowledge | None = None,
        document_labels: bool = True,
        journal: Journal | None = None,
    ) -> None:
        """``journal`` records every change for review and undo (docs/changes.md).
        ``document_labels`` applies each file's own labels (Markdown front matter, a
        ``<name>.labels.yaml`` sidecar) on every path: reads, listings, grep and search
        (``bastion.labels.store``). Turn it off only where no file carries labels."""
        table = mounts if isinstance(mounts, MountTable) else MountTable(mounts)
        if document_labels:
            table = MountTable(
                replace(m, store=DocumentLabels(m.store, m.labels, policy.classifications))
                if not isinstance(m.store, DocumentLabels)
                else m
                for m in table.mounts
            )
        sink = audit if audit is not None else MemoryAuditSink()
        self._shared = Shared(table, policy, sink, knowledge, journal)
        self._bind(principal or Principal.of("local"), owner=principal is None)

    def _bind(
        self, principal: Principal, *, owner: bool = False, thread: str | None = None
    ) -> None:
        """Build this view's parts for ``principal`` (acting in ``thread``)."""
        shared = self._shared
        self.principal = principal
        self.thread = thread
        self._owner = owner
        self._ctx = GuardContext(principal, shared.policy, shared.audit, shared.limiter)
        self._knowledge = shared.knowledge
        self._router = Router(shared.mounts, self._ctx, shared.labels)
        follower = IndexFollower(shared.knowledge, shared.policy.classifications)
        self._files = FileOps(self._router, follower)
        self._tree = TreeOps(self._router)
        self._transfers = Transfers(self._router, follower)
        self._searching = Searching(shared.knowledge, self._router, owner=owner)
        self._asking = Asking(self._searching, self.search)
        shared.threads.bind(self._ctx, thread)
        self._changes = ChangeReview(self._router, follower, shared.journal, thread)

    def with_principal(self, principal: Principal) -> Workspace:
        """A view of the same workspace acting for ``principal``."""
        view = object.__new__(Workspace)
        view._shared = self._shared
        view._bind(principal)
        return view

    def with_thread(self, thread: str | None) -> Workspace:
        """A view for the same principal whose changes are journalled as ``thread``'s."""
        view = object.__new__(Workspace)
        view._shared = self._shared
        view._bind(self.principal, owner=self._owner, thread=thread)
        return view

    def reconfigured(self, *, policy: Policy, mounts: Iterable[Mount]) -> Workspace:
        """A new owner workspace over the same stores, index, audit, journal and processes
        with ``policy`` and ``mounts`` (the same stores, with new scopes or labels): what a
        server swaps in when its file changes. Nothing it remembers about access is carried
        over (decisions, labels, search checks are all keyed to the new one)."""
        old = self._shared
        table = MountTable(replace(m, store=bare(m.store)) for m in mounts)
        knowledge = old.knowledge.knowledge if old.knowledge is not None else None
        fresh = Workspace(
            table, policy=policy, audit=old.audit, knowledge=knowledge, journal=old.journal
        )
        fresh._shared.processes = old.processes
        fresh._shared.threads = old.threads
        if old.limiter is not None and policy.rate_limit == old.policy.rate_limit:
            fresh._shared.limiter = old.limiter
            fresh._bind(fresh.principal, owner=True)
        return fresh

    def sync(self) -> SyncWorkspace:
        """The blocking facade over this workspace."""
        return SyncWorkspace(self)

    def _link(self) -> KnowledgeLink:
        return self._searching.link()

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self._shared.mounts.mounts

    @property
    def policy(self) -> Policy:
        return self._shared.policy

    @property
    def view(self) -> MountView:
        """The mounts as this view's principal sees them (a mount it may see nothing of is not
        there), and what it is told where it sees none (``core.visibility``)."""
        return self._router.view

    @property
    def audit(self) -> AuditSink:
        """The audit log as this view may read it: the shared sink itself for a workspace
        built without a principal (its owner); for a principal, an :class:`AuditView` of its
        own records, or of every record when the policy grants it ``audit`` on ``/``."""
        if self._owner:
            return self._shared.audit
        everyone = self._ctx.allows(Action.AUDIT, VPath.ROOT)
        return AuditView(self._shared.audit, self.principal, everyone=everyone)

    def filesystem_map(self) -> str:
        """A short text for an agent's system prompt: each mount, its scope, what it may do."""
        return filesystem_map(self._shared.mounts.mounts, self._ctx)

    def parse_path(self, path: str | VPath, *, operation: str) -> VPath:
        """``path`` parsed as this workspace's methods parse theirs. For a layer that parses
        a request's paths before it calls the workspace (the agent tools): a malformed path
        raises :class:`InvalidPathError` and is rate-limited and audited as a refused
        ``operation`` (one record), as it would be inside any workspace method; a well-formed
        one is not recorded here."""
        return parse_request(self._ctx, path, operation)

    @property
    def has_index(self) -> bool:
        """True when the workspace keeps a search index."""
        return self._searching.has_index

    @property
    def search_modes(self) -> tuple[str, ...]:
        """The modes :meth:`search` offers: ``()`` without an index, ``("bm25",)`` for a
        keyword-only index, else ``("bm25", "vector", "hybrid")``."""
        return self._searching.search_modes

    async def stat(self, path: str | VPath) -> FileInfo:
        """Size, kind, modification time and version of one entry."""
        return await self._files.stat(path)

    async def exists(self, path: str | VPath) -> bool:
        """True when the entry exists and the principal may see it."""
        return await self._files.exists(path)

    async def read_bytes(
        self, path: str | VPath, *, start: int | None = None, end: int | None = None
    ) -> bytes:
        """The file's bytes, or the byte range ``[start, end)``; only the range is loaded.

        One read returns at most the policy's ``max_file_bytes``: a larger file is read a
        range at a time, and a larger range is refused (never cut silently).
        """
        return await self._files.read_bytes(path, start=start, end=end)

    async def read_text(
        self,
        path: str | VPath,
        *,
        offset: int = 0,
        limit: int | None = None,
        encoding: str = "utf-8",
    ) -> str:
        """The file as text, or ``limit`` lines starting after ``offset`` lines.

        A line range streams the file in 64 KiB pages and stops once it has the lines, so a
        range of a large file never loads the whole file. Undecodable bytes become U+FFFD.
        One read returns at most the policy's ``max_file_bytes``; ask for fewer lines.
        """
        return await self._files.read_text(path, offset=offset, limit=limit, encoding=encoding)

    async def read_lines(
        self,
        path: str | VPath,
        *,
        offset: int = 0,
        limit: int | None = None,
        encoding: str = "utf-8",
    ) -> TextPage:
        """``limit`` lines starting after ``offset`` lines (all of them without ``limit``),
        with the file's info as read (its version: what a later ``write(if_version=...)``
        expects) and whether more lines follow: one operation, one audit record.

        Lines are counted as in :meth:`read_text`, and the same read limit applies.
        """
        return await self._files.read_lines(path, offset=offset, limit=limit, encoding=encoding)

    async def write(
        self,
        path: str | VPath,
        content: str | bytes,
        *,
        mode: WriteMode | str = WriteMode.OVERWRITE,
        parents: bool = True,
        backup: bool = False,
        if_version: str | None = None,
    ) -> FileInfo:
        """Create, overwrite or append to a file.

        ``mode="create"`` fails if the file exists; ``if_version`` fails with a conflict when
        the file changed since that version; ``backup=True`` keeps the previous content as
        ``NAME.bak`` beside it. A refused write changes nothing (the backup included).
        """
        return await self._files.write(
            path, content, mode=mode, parents=parents, backup=backup, if_version=if_version
        )

    async def append(
        self, path: str | VPath, content: str | bytes, *, parents: bool = True
    ) -> FileInfo:
        """Add ``content`` to the end of a file (creating it if needed)."""
        return await self._files.append(path, content, parents=parents)

    async def edit(
        self,
        path: str | VPath,
        old: str,
        new: str,
        *,
        replace_all: bool = False,
        if_version: str | None = None,
    ) -> EditResult:
        """Replace the exact text ``old`` with ``new``; ``old`` must occur once unless
        ``replace_all``. The write is conditional on the version read, so a concurrent change
        gives a conflict instead of a lost update."""
        return await self._files.edit(
            path, old, new, replace_all=replace_all, if_version=if_version
        )

    async def mkdir(
        self, path: str | VPath, *, parents: bool = True, exist_ok: bool = True
    ) -> None:
        """Create a directory (and its parents unless ``parents=False``)."""
        return await self._files.mkdir(path, parents=parents, exist_ok=exist_ok)

    async def delete(self, path: str | VPath, *, recursive: bool = False) -> None:
        """Delete a file or an empty directory; a whole tree only with ``recursive=True``,
        and then only if every entry in it may be deleted by this principal."""
        return await self._files.delete(path, recursive=recursive)

    async def list(
        self,
        path: str | VPath = "/",
        *,
        recursive: bool = False,
        depth: int | None = None,
    ) -> builtins.list[FileInfo]:
        """Entries under ``path``: direct children, or the whole tree with ``recursive=True``
        (``depth`` levels at most). Mounts below ``path`` appear as directories."""
        return await self._tree.list(path, recursive=recursive, depth=depth)

    async def glob(
        self, pattern: str, *, path: str | VPath = "/", limit: int | None = None
    ) -> builtins.list[FileInfo]:
        """Entries matching a glob (``**/*.md``); relative patterns start at ``path``."""
        return await self._tree.glob(pattern, path=path, limit=limit)

    async def grep(
        self,
        pattern: str,
        path: str | VPath = "/",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        context: int = 0,
        glob: str | None = None,
        max_per_file: int = 100,
        max_total: int = 1000,
    ) -> GrepResult:
        """Lines matching ``pattern`` (plain text, or an RE2 regular expression with
        ``regex=True``) in the files under ``path``, as ``path:line: text``."""
        return await self._tree.grep(
            pattern,
            path,
            regex=regex,
            ignore_case=ignore_case,
            context=context,
            glob=glob,
            max_per_file=max_per_file,
            max_total=max_total,
        )

    async def copy(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Copy a file or a directory tree; never overwrites unless ``overwrite=True``."""
        return await self._transfers.copy(src, dst, overwrite=overwrite)

    async def move(
        self, src: str | VPath, dst: str | VPath, *, overwrite: bool = False
    ) -> FileInfo:
        """Move or rename. Refuses to replace an existing target unless ``overwrite=True``."""
        return await self._transfers.move(src, dst, overwrite=overwrite)

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

        ``mode`` is ``bm25``, ``vector`` or ``hybrid`` (a keyword-only index offers ``bm25``
        only; by default hybrid where the index offers it, else bm25:
        :func:`bastion.workspace.operations.search_mode`); ``path`` limits the search to a
        directory; ``filter`` takes ``tags``,
        ``section``, ``date_from``, ``date_to``, ``doc_ids`` and ``classifications``;
        ``min_score`` drops weaker hits (scores are on the mode's own scale); ``related=True``
        adds, flagged, the documents one relation away from the hits.
        """
        return await self._searching.search(
            query, mode=mode, k=k, min_score=min_score, filter=filter, path=path, related=related
        )

    async def index_directory(
        self,
        path: str | VPath = "/",
        *,
        progress: Progress | None = None,
        segments: Segments | None = None,
    ) -> IndexSummary:
        """Index every file under ``path`` that this principal can see (files already
        indexed are refreshed); ``progress(done, total, path)`` is called after each batch of
        files, ``segments(IndexProgress)`` after each segment of a large file is indexed."""
        return await self._searching.index_directory(path, progress=progress, segments=segments)

    async def rebuild_index(
        self, *, progress: Progress | None = None, segments: Segments | None = None
    ) -> IndexSummary:
        """Throw the index away and index every file of every readable mount again (recovers
        an index that was lost or is stale). An operator's task: it reads as the system, and
        a principal needs the ``reindex`` action on ``/`` (:class:`PolicyDeniedError`
        otherwise); the summary names only what the principal may read, and its progress is a
        percentage (``progress(percent, 100, "")``, no segments): paths and counts of the walk
        are told to the owner's view only."""
        return await self._searching.rebuild_index(progress=progress, segments=segments)

    async def reindex(
        self, *, progress: Progress | None = None, segments: Segments | None = None
    ) -> IndexSummary:
        """Repair the index without starting over: index the files that are missing from it
        or changed since (version or labels), and drop documents whose files are gone. Run it
        when a process starts over an existing index, or after writes that bypassed it (a
        crash between a store write and its index update). An operator's task: it reads as
        the system, and a principal needs the ``reindex`` action on ``/``
        (:class:`PolicyDeniedError` otherwise); progress as for :meth:`rebuild_index`."""
        return await self._searching.reindex(progress=progress, segments=segments)

    async def ask(
        self,
        question: str,
        *,
        k: int = 8,
        mode: str | None = None,
        budget_tokens: int = 2048,
        reranker: Reranker | None = None,
        chat: ChatModel | None = None,
        guardrails: GuardrailsPort | bool = True,
        verify: bool | Verifier = True,
        path: str | VPath = "/",
        filter: Mapping[str, Any] | None = None,
        relevance_floor: float | None = ASK_RELEVANCE_FLOOR,
    ) -> Answer:
        """Answer ``question`` from the documents this principal may read, with citations.

        Retrieves the ``k`` best chunks (``mode`` as for :meth:`search`; ``hybrid`` falls back
        to ``bm25`` on a keyword-only index), reranks them (``reranker``: none by default),
        assembles a context of at most ``budget_tokens`` tokens, generates the answer (the
        extractive answerer, or ``chat``), and verifies it (``verify``: True for the
        deterministic check, a ``Verifier`` to tune it or add a judge, False to skip).
        ``guardrails`` screens the question, each chunk and the answer (True: the built-in
        :class:`~bastion.governance.guardrails.Guardrails`; False: none; or your own object
        with ``check_question``, ``check_chunk``, ``check_answer``). With no authorized
        context the answer is "No document you can read answers this question." and cites nothing.
        ``relevance_floor``: the share of the question's topic terms a chunk's best sentence
        must cover to enter the context (and a sentence to be quoted and verified); below it
        for every chunk, the answer refuses. ``None`` switches the floor off (see docs/ask.md).
        """
        return await self._asking.ask(
            question,
            k=k,
            mode=mode,
            budget_tokens=budget_tokens,
            reranker=reranker,
            chat=chat,
            guardrails=guardrails,
            verify=verify,
            path=path,
            filter=filter,
            relevance_floor=relevance_floor,
        )

    async def run(
        self,
        command: builtins.list[str] | str,
        *,
        cwd: str | VPath = "/",
        env: dict[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 30.0,
        limits: RunLimits | None = None,
        review: Review | None = None,
    ) -> RunResult:
        """Run a command in a sandbox over this principal's view of the workspace; what it
        changes comes back through the guard (``bastion.sandbox``, ``docs/sandbox.md``). Needs
        the ``execute`` action on ``cwd`` (``*`` in a rule does not grant it). ``review`` is
        asked about each change before it is written back (``bastion.sandbox.approval``);
        with ``limits.network`` an allow-list, each request to the proxy is audited."""
        from bastion.sandbox import run_in_sandbox

        vp = may_execute(self._ctx, cwd, command, stdin=stdin)
        return await run_in_sandbox(
            self,
            command,
            cwd=vp,
            env=env,
            stdin=stdin,
            timeout=timeout,
            limits=limits,
            review=review,
            record=egress_recorder(self._ctx, vp),
        )

    async def start_process(
        self,
        command: builtins.list[str] | str,
        *,
        cwd: str | VPath = "/",
        env: dict[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 600.0,
        limits: RunLimits | None = None,
        review: Review | None = None,
    ) -> ProcessInfo:
        """Start a command in the background over this principal's view, as :meth:`run` would
        run it; it returns at once. Only this principal sees the process; its changes come back
        through the guard when it exits (``docs/sandbox.md``)."""
        return await self._shared.processes.start(
            self,
            self._ctx,
            command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            timeout=timeout,
            limits=limits,
            review=review,
        )

    async def processes(self) -> builtins.list[ProcessInfo]:
        """This principal's background processes, running and recently ended."""
        return await self._shared.processes.list(self._ctx)

    async def read_output(
        self, process_id: str, *, stream: Stream = "stdout", offset: int = 0, limit: int = 65536
    ) -> OutputChunk:
        """Up to ``limit`` bytes a background process printed, from byte ``offset``."""
        return await self._shared.processes.read(
            self._ctx, process_id, stream=stream, offset=offset, limit=limit
        )

    async def send_input(self, process_id: str, data: str | bytes, *, close: bool = False) -> int:
        """Write to a background process's input (``close``: then end it); the bytes taken."""
        return await self._shared.processes.send(self._ctx, process_id, data, close=close)

    async def kill_process(self, process_id: str) -> ProcessInfo:
        """Kill a background process and its whole tree; changes not written back stay out."""
        return await self._shared.processes.kill(self._ctx, process_id)

    async def write_back(self, process_id: str) -> ProcessInfo:
        """Bring back, through the guard, what a running background process changed so far."""
        return await self._shared.processes.write_back(self._ctx, process_id)

    async def close_processes(self) -> int:
        """Kill every background process of this workspace, every principal's (what ending a
        scope does); the number killed. Dropping the workspace kills them too."""
        return await self._shared.processes.close()

    # -- the change journal (docs/changes.md) ------------------------------------------------

    async def changes(
        self,
        *,
        thread: str | None = None,
        since: float | None = None,
        principal: str | None = None,
        after: int | None = None,
        limit: int = 1000,
    ) -> builtins.list[Change]:
        """The first ``limit`` changes you may see, oldest first (page on with ``after``);
        ``principal``: only the changes that principal (by id) made."""
        return await self._changes.changes(
            thread=thread, since=since, principal=principal, after=after, limit=limit
        )

    async def diff(self, change: int) -> str:
        """What ``change`` did, as a unified diff per file (only files you may read)."""
        return await self._changes.diff(change)

    async def undo(self, change: int) -> Rollback:
        """Take ``change`` back; a conflict, and nothing changed, if a file changed since."""
        return await self._changes.undo(change)

    async def undo_last(self) -> Rollback:
        """Take back your own last change (in this view's thread, when it has one)."""
        return await self._changes.undo_last(self.thread)

    async def revert(self, thread: str) -> Rollback:
        """Take back every change of ``thread`` you may see; all or nothing, as :meth:`undo`."""
        return await self._changes.revert(thread)

    async def checkpoint(self, name: str) -> Checkpoint:
        """Name this point of the journal, for :meth:`restore`."""
        return await self._changes.checkpoint(name)

    async def checkpoints(self) -> builtins.list[Checkpoint]:
        """The checkpoints, oldest first."""
        return await self._changes.checkpoints()

    async def restore(self, checkpoint: str) -> Rollback:
        """Take back every change (you may see) made after ``checkpoint``; as :meth:`undo`."""
        return await self._changes.restore(checkpoint)

    def overlay(self, prefix: str | VPath) -> OverlayReview:
        """The overlay mounted at ``prefix``, this view's layer of it (its thread's): the
        changes you may read, apply, discard (docs/changes.md, "Overlay mounts")."""
        index = IndexFollower(self._knowledge, self._shared.policy.classifications)
        return OverlayReview(self._router, prefix, self.thread, index)


# -- the blocking facade ---------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[Workspace, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[SyncWorkspace, P], R]:
    def call(self: SyncWorkspace, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return run_blocking(method(self.aio, *args, **kwargs))

    functools.update_wrapper(call, method)
    return call


class SyncWorkspace:
    """Blocking twin of :class:`Workspace`; ``aio`` is the async workspace underneath."""

    def __init__(self, aio: Workspace) -> None:
        self.aio = aio

    @classmethod
    def create(cls, mounts: Any, **kwargs: Any) -> SyncWorkspace:
        """Build the async workspace and wrap it: ``SyncWorkspace.create(mounts, policy=...)``."""
        return cls(Workspace(mounts, **kwargs))

    # Plain (non-async) members are passed through.
    @property
    def principal(self) -> Principal:
        return self.aio.principal

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self.aio.mounts

    @property
    def audit(self) -> AuditSink:
        return self.aio.audit

    def filesystem_map(self) -> str:
        return self.aio.filesystem_map()

    def parse_path(self, path: str | VPath, *, operation: str) -> VPath:
        return self.aio.parse_path(path, operation=operation)

    def overlay(self, prefix: str | VPath) -> SyncOverlayReview:
        return SyncOverlayReview(self.aio.overlay(prefix))

    @property
    def has_index(self) -> bool:
        return self.aio.has_index

    @property
    def search_modes(self) -> tuple[str, ...]:
        return self.aio.search_modes

    def with_principal(self, principal: Principal) -> SyncWorkspace:
        return SyncWorkspace(self.aio.with_principal(principal))

    def with_thread(self, thread: str | None) -> SyncWorkspace:
        return SyncWorkspace(self.aio.with_thread(thread))

    stat = _blocking(Workspace.stat)
    exists = _blocking(Workspace.exists)
    read_bytes = _blocking(Workspace.read_bytes)
    read_text = _blocking(Workspace.read_text)
    read_lines = _blocking(Workspace.read_lines)
    write = _blocking(Workspace.write)
    append = _blocking(Workspace.append)
    edit = _blocking(Workspace.edit)
    mkdir = _blocking(Workspace.mkdir)
    delete = _blocking(Workspace.delete)
    copy = _blocking(Workspace.copy)
    move = _blocking(Workspace.move)
    list = _blocking(Workspace.list)
    glob = _blocking(Workspace.glob)
    grep = _blocking(Workspace.grep)
    search = _blocking(Workspace.search)
    index_directory = _blocking(Workspace.index_directory)
    rebuild_index = _blocking(Workspace.rebuild_index)
    reindex = _blocking(Workspace.reindex)
    ask = _blocking(Workspace.ask)
    run = _blocking(Workspace.run)
    start_process = _blocking(Workspace.start_process)
    processes = _blocking(Workspace.processes)
    read_output = _blocking(Workspace.read_output)
    send_input = _blocking(Workspace.send_input)
    kill_process = _blocking(Workspace.kill_process)
    write_back = _blocking(Workspace.write_back)
    close_processes = _blocking(Workspace.close_processes)
    changes = _blocking(Workspace.changes)
    diff = _blocking(Workspace.diff)
    undo = _blocking(Workspace.undo)
    undo_last = _blocking(Workspace.undo_last)
    revert = _blocking(Workspace.revert)
    checkpoint = _blocking(Workspace.checkpoint)
    checkpoints = _blocking(Workspace.checkpoints)
    restore = _blocking(Workspace.restore)
