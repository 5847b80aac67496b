"""The offline answerer: no model, only sentences copied from the contexts, each cited.

It answers the question asked, part by part (:mod:`~bastion.governance.answer.evidence`): a
two-part question gets a sentence for each part, wherever in the contexts it sits. A sentence
(a prose sentence, a list item, a table row written ``Column: cell; ...``, each read under its
headings) enters the answer only when its evidence answers a part of the question at the
floor. Headings, bold labels and questions are never quoted (they state nothing).

For each part, the sentences that answer it are taken best first (ties: fewer words borrowed
from headings, then the better-ranked context, then the earlier sentence): every one of the
context holding the best, and those of other contexts that score within ``margin`` of the
best (on the whole evidence, or on the words alone: the bi-encoder stretches one part's scores
apart), while the part's share of ``max_words`` is not spent;
near-duplicates are dropped; when the best sentence holds a name or code of the part
(``Paris``, ``P1``), only sentences that hold it too are quoted (the row asked about, not its
neighbours). When the part asks for a figure and none of those holds one, the
best answering sentence that does is quoted too (``Approval thresholds depend on the amount``
answers nothing without the amounts). The sentences are then written in reading order (context rank,
then place in the chunk), each followed by the ``§chunk_id`` of its chunk. Deterministic.

Because every sentence is copied from the chunk it cites, the support check passes by
construction; the workflow verifies anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError
from bastion.governance.answer.evidence import (
    Weighed,
    names,
    question_parts,
    wants_figure,
    weigh,
)
from bastion.governance.answer.generate import Draft
from bastion.governance.answer.models import NO_ANSWER, Context
from bastion.governance.answer.relevance import RELEVANCE_FLOOR
from bastion.governance.answer.text import numbers, terms

__all__ = ["ExtractiveAnswerer"]


def _held(item: Weighed) -> frozenset[str]:
    """The terms a sentence holds, itself or under its headings."""
    return terms(" ".join((*item.passage.headings, item.passage.sentence)))


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractiveAnswerer:
    """Composes an answer from the contexts' sentences that bear on the question."""

    floor: float = RELEVANCE_FLOOR
    """The evidence score a sentence must reach to be quoted."""
    max_words: int = 80
    """The answer stops growing once it holds this many words (the first sentence always
    enters): about one paragraph, or one short list."""
    margin: float = 0.1
    """A sentence of another context than the best one is quoted only within this of the
    part's best score."""
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
        answering = [w for w in weigh(question, contexts) if w.answers(self.floor)]
        if not answering:
            return Draft(text=NO_ANSWER, no_answer=True)
        parts = sorted({w.part for w in answering})
        parts_of = question_parts(question)
        share = max(1, self.max_words // len(parts))
        chosen: list[Weighed] = []
        for part in parts:
            mine = sorted(
                (w for w in answering if w.part == part),
                key=lambda w: (-w.score, w.borrowed, w.rank, w.position),
            )
            top = mine[0].score
            top_words = max(w.lexical for w in mine)
            asked = names(parts_of[part])
            if asked & _held(mine[0]):  # the best holds a name asked (Paris, P1): so must all
                mine = [w for w in mine if asked & _held(w)]
            words = 0
            taken: list[Weighed] = []
            for item in mine:
                close = (
                    item.rank == mine[0].rank  # the context that answers best: all it answers
                    or item.score >= top - self.margin
                    or item.lexical >= top_words - self.margin
                )
                if not close or (words and words >= share):
                    continue
                if any(self._duplicate(item, other) for other in chosen + taken):
                    continue
                taken.append(item)
                words += len(item.passage.sentence.split())
            if wants_figure(parts_of[part]) and not any(numbers(w.passage.sentence) for w in taken):
                figure = next((w for w in mine if numbers(w.passage.sentence)), None)
                if figure is not None:  # the question asks for a figure: quote the best one
                    taken.append(figure)
            chosen += taken
        chosen.sort(key=lambda w: (w.rank, w.position))
        return Draft(text="\n".join(f"{w.passage.sentence} §{w.chunk_id}" for w in chosen))

    def _duplicate(self, a: Weighed, b: Weighed) -> bool:
        if a.passage.sentence.casefold() == b.passage.sentence.casefold():
            return True
        wa, wb = terms(a.passage.sentence), terms(b.passage.sentence)
        union = wa | wb
        return bool(union) and len(wa & wb) / len(union) >= self.duplicate_overlap
