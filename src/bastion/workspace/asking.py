"""``Workspace.ask``: a governed answer with citations, for the workspace's own principal.

Retrieval goes through :meth:`~bastion.Workspace.search`, so the guard, the access filter
pushed down into the index and the post-check all apply; every chunk is then fetched whole
from the index and checked once more before it may enter the context (defence in depth: scores
are not touched). The rest of the workflow is :mod:`bastion.governance.answer`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bastion.core.paths import VPath
from bastion.core.text import RELEVANCE_FLOOR
from bastion.workspace.modes import search_mode
from bastion.workspace.routing import parse_in
from bastion.workspace.searching import Searching

if TYPE_CHECKING:
    from bastion.core.guard import GuardContext
    from bastion.governance.answer.chat import ChatModel
    from bastion.governance.answer.generate import Generator
    from bastion.governance.answer.guardrail_port import GuardrailsPort
    from bastion.governance.answer.models import Answer, Context
    from bastion.governance.answer.rerank import Reranker
    from bastion.governance.answer.verify import Verifier
    from bastion.governance.answer.workflow import Retrieval
    from bastion.knowledge.embedders.base import Embedder
    from bastion.knowledge.hits import SearchResult
    from bastion.knowledge.index.models import DocumentMeta, IndexedChunk
    from bastion.knowledge.index.port import Index
    from bastion.workspace.indexing import KnowledgeLink

__all__ = ["Asking", "SearchFunction", "embedding_similarity"]


class SearchFunction(Protocol):
    """How ``ask`` retrieves: the workspace's own ``search`` (whatever a subclass made of it)."""

    async def __call__(
        self,
        query: str,
        *,
        mode: str = ...,
        k: int = ...,
        path: str | VPath = ...,
        filter: Mapping[str, Any] | None = ...,
    ) -> SearchResult: ...


ASK_RELEVANCE_FLOOR = RELEVANCE_FLOOR
"""``relevance_floor``'s default: the answer workflow's own
(:data:`bastion.core.text.RELEVANCE_FLOOR`)."""


class Asking:
    """``ask`` for one principal: retrieval through ``search``, the index through
    ``searching`` (the same guard context)."""

    def __init__(self, searching: Searching, search: SearchFunction) -> None:
        self._searching = searching
        self._search = search
        self._ctx: GuardContext = searching.ctx

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
        (see :meth:`Workspace.ask`)"""
        from bastion.governance.answer.generate import ChatAnswerer
        from bastion.governance.answer.rerank import NoRerank
        from bastion.governance.answer.workflow import AnswerWorkflow, AuditTrail
        from bastion.knowledge.index.models import SearchMode

        link = self._searching.link()
        if k < 1:
            raise ValueError("k must be at least 1")
        with self._ctx.operation("ask", path) as op:
            vp = parse_in(op, path)
            offered = tuple(m.value for m in link.knowledge.modes)
            chosen = SearchMode.parse(search_mode(mode, offered))
            notes: tuple[str, ...] = ()
            if mode is None and chosen is not SearchMode.HYBRID:
                notes = ("keyword-only index: hybrid retrieval fell back to bm25",)
            elif chosen is SearchMode.HYBRID and chosen not in link.knowledge.modes:
                chosen = SearchMode.BM25
                notes = ("keyword-only index: hybrid retrieval fell back to bm25",)
            workflow = AnswerWorkflow(
                counter=link.knowledge.chunker.counter,
                budget_tokens=budget_tokens,
                reranker=reranker if reranker is not None else NoRerank(),
                generator=ChatAnswerer(chat) if chat is not None else _extractive(relevance_floor),
                verifier=_verifier(verify, relevance_floor),
                guardrails=_guardrails(guardrails),
                relevance_floor=relevance_floor,
                similarity=(
                    embedding_similarity(link.knowledge.embedder)
                    if link.knowledge.embedder is not None and chosen is not SearchMode.BM25
                    else None
                ),
            )
            retriever = _SearchRetriever(
                self._search,
                link,
                self._ctx,
                k=k,
                mode=chosen.value,
                path=vp,
                options=filter,
                notes=notes,
            )
            trail = AuditTrail(self._ctx.audit, self._ctx.principal, str(vp))
            answer = await workflow.run(question, retriever, trail)
            op.reason = (
                f"{answer.status.value}: cited {len(answer.citations)} of "
                f"{len(answer.contexts)} contexts; "
                + ("verified" if answer.verified else "NOT verified")
            )
            op.bytes = len(answer.citations)
            return answer


def _guardrails(choice: GuardrailsPort | bool) -> GuardrailsPort | None:
    if choice is True:
        from bastion.governance.guardrails import Guardrails

        return Guardrails()
    if choice is False:
        return None
    return choice


class _SearchRetriever:
    """Retrieval for one ask: ``Workspace.search``, then each chunk fetched whole and checked
    again with the guard's own ``may_read``."""

    def __init__(
        self,
        search: SearchFunction,
        link: KnowledgeLink,
        ctx: GuardContext,
        *,
        k: int,
        mode: str,
        path: VPath,
        options: Mapping[str, Any] | None,
        notes: tuple[str, ...],
    ) -> None:
        self._search = search
        self._link = link
        self._ctx = ctx
        self._k = k
        self._mode = mode
        self._path = path
        self._options = options
        self._notes = notes
        self._docs: dict[str, DocumentMeta] = {}

    async def retrieve(self, question: str) -> Retrieval:
        from bastion.governance.answer.models import Context
        from bastion.governance.answer.workflow import Retrieval

        link = self._link
        result = await self._search(
            question, mode=self._mode, k=self._k, path=self._path, filter=self._options
        )
        doc_ids = list(dict.fromkeys(hit.doc_id for hit in result.hits))
        chunks = await asyncio.to_thread(_chunks_by_id, link.knowledge.index, doc_ids)
        contexts: list[Context] = []
        dropped: list[tuple[str, str]] = []
        for hit in result.hits:
            chunk = chunks.get(hit.chunk_id)
            if chunk is None:
                dropped.append((hit.chunk_id, "no longer indexed (the file changed)"))
                continue
            if chunk.doc.path != hit.path or not link.may_read(self._ctx, chunk.doc):
                dropped.append((hit.chunk_id, "re-check refused it"))
                continue
            self._docs[chunk.chunk_id] = chunk.doc
            contexts.append(
                Context(
                    chunk_id=chunk.chunk_id,
                    doc_id=chunk.doc.doc_id,
                    path=chunk.doc.path,
                    start_line=hit.start_line,
                    end_line=hit.end_line,
                    text=chunk.text,
                    score=hit.score,
                    retrieval_score=hit.score,
                    section=chunk.section,
                    title=chunk.doc.title,
                    line_map=await self._line_map(chunk, hit.start_line, hit.end_line),
                )
            )
        return Retrieval(
            contexts=tuple(contexts),
            considered=tuple(hit.chunk_id for hit in result.hits),
            dropped=tuple(dropped),
            mode=self._mode,
            notes=self._notes,
        )

    async def _line_map(self, chunk: IndexedChunk, start: int, end: int) -> tuple[int, ...]:
        """The file line of each line of the chunk, where cleaning squeezed blank lines or
        joined a hyphenated word inside it (so that a citation points at the lines it took);
        empty in the common case, or when the file cannot be read (too large, gone)."""
        if chunk.text.count("\n") + 1 == end - start + 1:
            return ()
        from bastion.core.errors import BastionError
        from bastion.knowledge.linemap import chunk_line_map

        vp = VPath.parse(chunk.doc.path)
        mount = self._link.mounts.find(vp)
        if mount is None:
            return ()
        rel = mount.to_store_path(vp)
        try:
            if (await mount.store.stat(rel)).size > _LINE_MAP_BYTES:
                return ()
            data = await mount.store.read_all(rel)
        except BastionError:
            return ()
        return chunk_line_map(data.decode("utf-8", "replace"), start, end, chunk.text)

    def may_read(self, context: Context) -> bool:
        meta = self._docs.get(context.chunk_id)
        return meta is not None and self._link.may_read(self._ctx, meta)


_LINE_MAP_BYTES = 8 << 20
"""Files up to this size are read again to place a citation's lines exactly (only those whose
chunk lost lines to cleaning)."""

_CACHED = 8192
"""Sentence vectors kept per embedder: the sentences of a corpus recur from one ask to the
next, and embedding them is most of the cost of the similarity."""
_VECTORS: weakref.WeakKeyDictionary[Any, OrderedDict[str, Any]] = weakref.WeakKeyDictionary()


def embedding_similarity(embedder: Embedder) -> Any:
    """The answer workflow's ``similarity`` (:class:`~bastion.governance.answer.evidence.
    Similarity`) computed with ``embedder``: cosines of unit vectors. The texts' vectors are
    kept (the last :data:`_CACHED` per embedder); the queries are embedded every time."""
    cache = _VECTORS.setdefault(embedder, OrderedDict())

    async def similarity(queries: Sequence[str], texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        vectors = await embedder.embed([*queries, *missing])
        for text, vector in zip(missing, vectors[len(queries) :], strict=True):
            cache[text] = vector
        for text in texts:
            cache.move_to_end(text)
        read = np.stack([cache[t] for t in texts])
        while len(cache) > _CACHED:
            cache.popitem(last=False)
        return [[float(x) for x in row] for row in vectors[: len(queries)] @ read.T]

    return similarity


def _chunks_by_id(index: Index, doc_ids: Sequence[str]) -> dict[str, IndexedChunk]:
    return {c.chunk_id: c for doc_id in doc_ids for c in index.chunks_of(doc_id)}


def _extractive(floor: float | None) -> Generator:
    """The offline answerer, quoting sentences that cover ``floor`` of the question (its
    default where the floor is off)."""
    from bastion.governance.answer.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer() if floor is None else ExtractiveAnswerer(floor=floor)


def _verifier(verify: bool | Verifier, floor: float | None) -> Verifier | None:
    """``verify`` as given (a Verifier), the deterministic check at ``floor``, or none."""
    from bastion.governance.answer.verify import Verifier

    if isinstance(verify, Verifier) or not verify:
        return verify or None
    return Verifier() if floor is None else Verifier(relevance_floor=floor)
