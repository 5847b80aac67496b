"""The governed answer workflow: question guardrail -> retrieve (access filter pushed down, every
chunk re-checked) -> chunk guardrail -> relevance floor -> rerank -> assemble within a token
budget -> generate -> verify -> answer guardrail, each step audited.

The relevance floor (:mod:`~bastion.governance.answer.relevance`) holds in every retrieval mode:
a chunk none of whose sentences covers enough of the question does not enter the context, and
when no chunk is left the answer is :data:`NO_CONTEXT`, never the nearest authorized chunk.
When the chunk guardrail withheld every chunk that matched, the answer says so
(:func:`~bastion.governance.answer.models.guarded`), distinct from :data:`NO_CONTEXT`.

The workflow knows nothing of workspaces: a :class:`Retriever` brings it the chunks the asker
may read (``Workspace.ask`` supplies one built on ``Workspace.search``) and an
:class:`AuditTrail` takes one record per step. Records name chunk ids, counts and reasons, and
the question only by its length and a hash: never document text, never the question itself.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from bastion.core.audit import AuditRecord, AuditSink
from bastion.core.principal import Principal
from bastion.core.text import TokenCounter
from bastion.governance.answer.context import Assembly, assemble
from bastion.governance.answer.evidence import Similarity, answerability, with_similarities
from bastion.governance.answer.extractive import ExtractiveAnswerer
from bastion.governance.answer.generate import Generator
from bastion.governance.answer.guardrail_port import GuardrailsPort, checked
from bastion.governance.answer.locate import cited_lines
from bastion.governance.answer.models import (
    NO_CONTEXT,
    REFUSED,
    WITHHELD,
    Answer,
    AnswerStatus,
    Citation,
    Context,
    DroppedChunk,
    GuardrailOutcome,
    GuardrailReport,
    Verification,
    guarded,
    withheld_note,
)
from bastion.governance.answer.relevance import RELEVANCE_FLOOR
from bastion.governance.answer.rerank import NoRerank, Reranker
from bastion.governance.answer.text import cited_ids
from bastion.governance.answer.verify import Verifier

__all__ = ["AnswerWorkflow", "AuditTrail", "Retrieval", "Retriever"]

_IDS_SHOWN = 32
"""Chunk ids named in one audit record; more are counted."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Retrieval:
    """What retrieval found for one question, already re-checked chunk by chunk."""

    contexts: tuple[Context, ...]
    """Chunks the asker may read, with their full text, in retrieval order."""
    considered: tuple[str, ...] = ()
    """Ids of every chunk search returned (before the re-check)."""
    dropped: tuple[tuple[str, str], ...] = ()
    """(chunk id, why) for chunks the re-check refused or that changed since the search."""
    mode: str = ""
    notes: tuple[str, ...] = ()


class Retriever(Protocol):
    """Brings the workflow the chunks the asker may read."""

    async def retrieve(self, question: str) -> Retrieval: ...

    def may_read(self, context: Context) -> bool:
        """Whether the asker may read the chunk now (verification asks once more)."""
        ...


class AuditTrail:
    """Appends one :class:`AuditRecord` per step (operation ``ask.<step>``) to ``sink``."""

    def __init__(self, sink: AuditSink, principal: Principal, path: str = "/") -> None:
        self.sink = sink
        self.principal = principal
        self.path = path
        self._last = time.perf_counter()

    def record(self, step: str, *, reason: str, allowed: bool = True, count: int = 0) -> None:
        now = time.perf_counter()
        self.sink.append(
            AuditRecord(
                time=time.time(),
                principal=self.principal.id,
                tenant=self.principal.tenant,
                operation=f"ask.{step}",
                path=self.path,
                allowed=allowed,
                reason=reason,
                bytes=count,
                duration_ms=(now - self._last) * 1000.0,
            )
        )
        self._last = now


def _ids(ids: Iterable[str]) -> str:
    listed = list(ids)
    if not listed:
        return "none"
    shown = ",".join(listed[:_IDS_SHOWN])
    more = len(listed) - _IDS_SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "")


def _reasons(reasons: Sequence[str]) -> str:
    return "; ".join(reasons) or "no reason given"


@dataclass(kw_only=True)
class AnswerWorkflow:
    """The steps after authentication, configured once, run per question."""

    counter: TokenCounter
    """Counts context tokens: the tokenizer chunking used."""
    budget_tokens: int = 2048
    reranker: Reranker = field(default_factory=NoRerank)
    generator: Generator = field(default_factory=ExtractiveAnswerer)
    verifier: Verifier | None = field(default_factory=Verifier)
    """None switches verification off: the answer then says it is not verified."""
    guardrails: GuardrailsPort | None = None
    outlier_ratio: float = 0.25
    relevance_floor: float | None = RELEVANCE_FLOOR
    """The evidence score a chunk's best sentence must reach to enter the context (see
    :mod:`~bastion.governance.answer.evidence`); None switches the floor off."""
    similarity: Similarity | None = None
    """The bi-encoder's similarity, when the index has vectors: weighed with the other
    evidence (:func:`~bastion.governance.answer.evidence.with_similarities`)."""

    async def run(self, question: str, retriever: Retriever, trail: AuditTrail) -> Answer:
        digest = hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]
        trail.record("question", reason=f"chars={len(question)} sha256={digest}")
        report: GuardrailReport | None = None
        asked = question
        if self.guardrails is not None:
            verdict = await checked(self.guardrails.check_question(question))
            outcome = GuardrailOutcome(
                safe=verdict.safe,
                reasons=tuple(verdict.reasons),
                redacted=verdict.safe and verdict.redacted is not None,
            )
            report = GuardrailReport(question=outcome)
            if not verdict.safe:
                trail.record(
                    "guardrails.question",
                    allowed=False,
                    reason=f"refused: {_reasons(outcome.reasons)}",
                )
                return Answer(
                    answer=REFUSED,
                    status=AnswerStatus.REFUSED,
                    verification=self._no_claims(),
                    guardrails=report,
                    generator=self.generator.name,
                    reranker=self.reranker.name,
                )
            if verdict.redacted is not None:
                asked = verdict.redacted
                trail.record("guardrails.question", reason="answered the redacted question")

        retrieval = await retriever.retrieve(asked)
        trail.record(
            "retrieve",
            reason=f"mode={retrieval.mode} considered={_ids(retrieval.considered)}",
            count=len(retrieval.considered),
        )
        if retrieval.dropped:
            trail.record(
                "recheck",
                allowed=False,
                reason="dropped "
                + ", ".join(f"{cid}: {why}" for cid, why in retrieval.dropped[:_IDS_SHOWN]),
                count=len(retrieval.dropped),
            )
        candidates, dropped = await self._screen(retrieval.contexts)
        if dropped:
            trail.record(
                "guardrails.chunks",
                allowed=False,
                reason="dropped "
                + ", ".join(f"{d.chunk_id}: {_reasons(d.reasons)}" for d in dropped),
                count=len(dropped),
            )
            assert report is not None
            report = replace(report, chunks_dropped=dropped)
        screened = len(candidates)
        if self.similarity is not None and candidates:
            candidates = await with_similarities(asked, candidates, self.similarity)
        candidates = self._floor(asked, candidates, trail)
        if candidates and not isinstance(self.reranker, NoRerank):
            candidates = await self.reranker.rerank(asked, candidates)
            trail.record(
                "rerank",
                reason=f"{self.reranker.name}: {_ids(c.chunk_id for c in candidates)}",
                count=len(candidates),
            )
        assembly = assemble(
            candidates,
            budget_tokens=self.budget_tokens,
            counter=self.counter,
            outlier_ratio=self.outlier_ratio,
        )
        trail.record(
            "context",
            reason=(
                f"included={_ids(c.chunk_id for c in assembly.contexts)} "
                f"over_budget={_ids(assembly.over_budget)} outliers={_ids(assembly.outliers)} "
                f"tokens={assembly.tokens}/{assembly.budget}"
            ),
            count=len(assembly.contexts),
        )
        notes = list(retrieval.notes) + [
            f"§{c.chunk_id} was cut to fit the context budget"
            for c in assembly.contexts
            if c.truncated
        ]
        if dropped:
            notes.append(withheld_note(dropped))
        if screened and not candidates:
            notes.append(
                f"{screened} authorized chunk(s) were retrieved, but none answers the question "
                f"(evidence floor {self.relevance_floor:.2f})"
            )
        answer = await self._answer(asked, assembly, retriever, trail, report)
        if not assembly.contexts and dropped and not screened:
            answer = replace(answer, answer=guarded(dropped), status=AnswerStatus.GUARDED)
        return replace(answer, mode=retrieval.mode, notes=tuple(notes))

    def _floor(self, question: str, contexts: list[Context], trail: AuditTrail) -> list[Context]:
        """The contexts that reach the relevance floor (all of them when it is off)."""
        floor = self.relevance_floor
        if floor is None or not contexts:
            return contexts
        scores = answerability(question, contexts, floor)
        kept = [c for c, score in zip(contexts, scores, strict=True) if score >= floor]
        below = [
            f"{c.chunk_id}={score:.2f}"
            for c, score in zip(contexts, scores, strict=True)
            if score < floor
        ]
        trail.record(
            "relevance",
            allowed=bool(kept),
            reason=f"floor={floor:.2f} kept={_ids(c.chunk_id for c in kept)} below={_ids(below)}",
            count=len(kept),
        )
        return kept

    async def _screen(
        self, contexts: Sequence[Context]
    ) -> tuple[list[Context], tuple[DroppedChunk, ...]]:
        """The chunk guardrail: unsafe chunks out, redactions applied."""
        if self.guardrails is None:
            return list(contexts), ()
        kept: list[Context] = []
        dropped: list[DroppedChunk] = []
        for context in contexts:
            verdict = await checked(self.guardrails.check_chunk(context.text))
            if not verdict.safe:
                dropped.append(DroppedChunk(chunk_id=context.chunk_id, reasons=verdict.reasons))
            elif verdict.redacted is not None:
                kept.append(replace(context, text=verdict.redacted))
            else:
                kept.append(context)
        return kept, tuple(dropped)

    async def _answer(
        self,
        question: str,
        assembly: Assembly,
        retriever: Retriever,
        trail: AuditTrail,
        report: GuardrailReport | None,
    ) -> Answer:
        contexts = assembly.contexts
        base = Answer(
            answer=NO_CONTEXT,
            status=AnswerStatus.NO_CONTEXT,
            contexts=contexts,
            guardrails=report,
            generator=self.generator.name,
            reranker=self.reranker.name,
            verification=self._no_claims(),
        )
        if not contexts:
            trail.record("cite", reason="cited=none (no authorized context)")
            self._record_verification(trail, base.verification)
            return base
        draft = await self.generator.generate(question, contexts)
        trail.record("generate", reason=self.generator.name, count=len(draft.text))
        verification = None
        if self.verifier is not None:
            claims = "" if draft.no_answer else draft.text  # "not found" claims nothing
            verification = await self.verifier.verify(
                claims, contexts, retriever.may_read, question=question
            )
        text = draft.text
        status = AnswerStatus.NO_ANSWER if draft.no_answer else AnswerStatus.ANSWERED
        if self.guardrails is not None and not draft.no_answer:
            verdict = await checked(self.guardrails.check_answer(text))
            outcome = GuardrailOutcome(
                safe=verdict.safe,
                reasons=tuple(verdict.reasons),
                redacted=not verdict.safe and verdict.redacted is not None,
            )
            assert report is not None
            report = replace(report, answer=outcome)
            if not verdict.safe:
                text = verdict.redacted if verdict.redacted is not None else WITHHELD
                status = AnswerStatus.ANSWERED if outcome.redacted else AnswerStatus.WITHHELD
                trail.record(
                    "guardrails.answer",
                    allowed=False,
                    reason=("redacted" if outcome.redacted else "withheld")
                    + f": {_reasons(outcome.reasons)}",
                )
        by_id = {c.chunk_id: c for c in contexts}
        taken = cited_lines(text, contexts)
        citations = tuple(
            Citation.of(by_id[cid], taken.get(cid, ())) for cid in cited_ids(text) if cid in by_id
        )
        trail.record(
            "cite", reason=f"cited={_ids(c.chunk_id for c in citations)}", count=len(citations)
        )
        self._record_verification(trail, verification)
        return replace(
            base,
            answer=text,
            status=status,
            citations=citations,
            verification=verification,
            guardrails=report,
        )

    def _no_claims(self) -> Verification | None:
        """The verification of an answer that makes no claim: passed, or None when off."""
        return None if self.verifier is None else Verification(passed=True)

    @staticmethod
    def _record_verification(trail: AuditTrail, verification: Verification | None) -> None:
        if verification is None:
            trail.record("verify", reason="skipped: verification switched off (verify=False)")
        elif verification.passed:
            trail.record("verify", reason="passed", count=verification.sentences)
        else:
            trail.record(
                "verify",
                allowed=False,
                reason="failed: " + "; ".join(verification.problems),
                count=len(verification.problems),
            )
