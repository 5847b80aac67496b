"""The offline answerer: no model, only sentences copied from the contexts, each cited.

It answers the question asked, part by part (:mod:`~bastion.governance.answer.evidence`): a
two-part question gets a sentence for each part, wherever in the contexts it sits. A sentence
(a prose sentence, a list item, a table row written ``Column: cell; ...``, each read under its
headings) enters the answer only when its evidence answers a part of the question at the
floor. Headings, bold labels and questions are never quoted (they state nothing).

For each part, the sentences that answer it are taken best first (ties: fewer words borrowed
from headings, then the better-ranked context, then the earlier sentence) while they score
within ``margin`` of that part's best and the part's share of ``max_words`` is not spent;
near-duplicates are dropped. The sentences are then written in reading order (context rank,
then place in the chunk), each followed by the ``§chunk_id`` of its chunk. Deterministic.

Because every sentence is copied from the chunk it cites, the support check passes by
construction; the workflow verifies anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError
from bastion.governance.answer.evidence import Weighed, weigh
from bastion.governance.answer.generate import Draft
from bastion.governance.answer.models import NO_ANSWER, Context
from bastion.governance.answer.relevance import RELEVANCE_FLOOR
from bastion.governance.answer.text import terms

__all__ = ["ExtractiveAnswerer"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractiveAnswerer:
    """Composes an answer from the contexts' sentences that bear on the question."""

    floor: float = RELEVANCE_FLOOR
    """The evidence score a sentence must reach to be quoted."""
    max_words: int = 80
    """The answer stops growing once it holds this many words (the first sentence always
    enters): about one paragraph, or one short list."""
    margin: float = 0.2
    """A sentence is quoted only while its score is within this of its part's best."""
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
        share = max(1, self.max_words // len(parts))
        chosen: list[Weighed] = []
        for part in parts:
            mine = sorted(
                (w for w in answering if w.part == part),
                key=lambda w: (-w.score, w.borrowed, w.rank, w.position),
            )
            top = mine[0].score
            words = 0
            for item in mine:
                if item.score < top - self.margin or (words and words >= share):
                    break
                if any(self._duplicate(item, other) for other in chosen):
                    continue
                chosen.append(item)
                words += len(item.passage.sentence.split())
        chosen.sort(key=lambda w: (w.rank, w.position))
        return Draft(text="\n".join(f"{w.passage.sentence} §{w.chunk_id}" for w in chosen))

    def _duplicate(self, a: Weighed, b: Weighed) -> bool:
        if a.passage.sentence.casefold() == b.passage.sentence.casefold():
            return True
        wa, wb = terms(a.passage.sentence), terms(b.passage.sentence)
        union = wa | wb
        return bool(union) and len(wa & wb) / len(union) >= self.duplicate_overlap
