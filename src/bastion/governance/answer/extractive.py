"""The offline answerer: no model, only sentences copied from the contexts, each cited.

It answers the question, not the chunk: a sentence enters the answer only when it bears on the
question (:mod:`~bastion.governance.answer.relevance`): it covers at least ``floor`` of the
question's topic terms, itself or through the headings it sits under, and holds one of them
itself or under its nearest heading. Headings, bold labels and questions are never quoted (they
state nothing); a list item under ``### Code Review Process`` is quoted for a question about the
code review process.

Only the contexts that answer best are quoted (those whose best sentence covers as much of the
question as the best sentence anywhere): a weaker chunk would only add padding. Their sentences
that bear on the question are taken best-covering first (ties: fewer words
borrowed from headings, then the better-ranked context, then the earlier sentence) until
``max_words`` is reached, near-duplicates dropped, and are then written in reading order
(context rank, then place in the chunk), each followed by the ``§chunk_id`` of its chunk on a
line of its own. Deterministic.

Because every sentence is copied from the chunk it cites, the support check passes by
construction; the workflow verifies anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError
from bastion.governance.answer.generate import Draft
from bastion.governance.answer.models import NO_ANSWER, Context
from bastion.governance.answer.relevance import (
    RELEVANCE_FLOOR,
    Scored,
    question_terms,
    scored_passages,
)
from bastion.governance.answer.text import terms

__all__ = ["ExtractiveAnswerer"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractiveAnswerer:
    """Composes an answer from the contexts' sentences that bear on the question."""

    floor: float = RELEVANCE_FLOOR
    """Share of the question's topic terms a sentence must cover to be quoted."""
    max_words: int = 80
    """The answer stops growing once it holds this many words (the first sentence always
    enters): about one paragraph, or one short list."""
    duplicate_overlap: float = 0.8
    """A sentence sharing this share of its words (Jaccard) with a chosen one is a duplicate."""

    def __post_init__(self) -> None:
        if self.max_words < 1 or not 0 < self.floor <= 1:
            raise ConfigurationError(
                "ExtractiveAnswerer: max_words must be >= 1 and floor in (0, 1]"
            )

    @property
    def name(self) -> str:
        return "extractive"

    async def generate(self, question: str, contexts: Sequence[Context]) -> Draft:
        return self.compose(question, contexts)

    def compose(self, question: str, contexts: Sequence[Context]) -> Draft:
        """The answer, synchronously (it is pure and cheap)."""
        topic = question_terms(question)
        bearing = [s for s in scored_passages(topic, contexts) if s.coverage.bears(self.floor)]
        if not bearing:
            return Draft(text=NO_ANSWER, no_answer=True)
        best: dict[int, float] = {}
        for item in bearing:
            best[item.rank] = max(best.get(item.rank, 0.0), item.coverage.share)
        top = max(best.values())
        bearing = [s for s in bearing if best[s.rank] == top]
        bearing.sort(
            key=lambda s: (
                -s.coverage.share,
                len(s.coverage.covered - terms(s.passage.sentence)),
                s.rank,
                s.position,
            )
        )
        chosen: list[Scored] = []
        words = 0
        for item in bearing:
            if chosen and words >= self.max_words:
                break
            if any(self._duplicate(item, other) for other in chosen):
                continue
            chosen.append(item)
            words += len(item.passage.sentence.split())
        chosen.sort(key=lambda s: (s.rank, s.position))
        return Draft(text="\n".join(f"{s.passage.sentence} §{s.chunk_id}" for s in chosen))

    def _duplicate(self, a: Scored, b: Scored) -> bool:
        if a.passage.sentence.casefold() == b.passage.sentence.casefold():
            return True
        wa, wb = terms(a.passage.sentence), terms(b.passage.sentence)
        union = wa | wb
        return bool(union) and len(wa & wb) / len(union) >= self.duplicate_overlap
