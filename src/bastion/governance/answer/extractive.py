"""The offline answerer: no model, only sentences copied from the contexts, each cited.

Every sentence of every context is scored by the question's content words it contains
(stemmed, stop words out: the analyzer keyword search uses), each word weighted by how rare it
is among the candidate sentences, with a mild BM25-style length normalization. The best few are
kept, best first, near-duplicates dropped, each followed by the ``§chunk_id`` of its chunk and
put on a line of its own. Deterministic: ties go to the better-ranked context, then to the
earlier sentence.

Because every sentence is copied from the chunk it cites, verification passes by construction;
the workflow verifies anyway.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError
from bastion.governance.answer.generate import Draft
from bastion.governance.answer.models import NO_ANSWER, Context
from bastion.governance.answer.text import chunk_sentences, terms

__all__ = ["ExtractiveAnswerer"]


@dataclass(frozen=True, slots=True)
class _Candidate:
    rank: int
    position: int
    sentence: str
    chunk_id: str
    words: frozenset[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractiveAnswerer:
    """Composes an answer from the contexts' best supporting sentences."""

    max_sentences: int = 3
    min_relative: float = 0.3
    """A sentence scoring below this share of the best sentence's score is left out."""
    duplicate_overlap: float = 0.8
    """A sentence sharing this share of its words (Jaccard) with a chosen one is a duplicate."""

    def __post_init__(self) -> None:
        if self.max_sentences < 1 or not 0 <= self.min_relative <= 1:
            raise ConfigurationError(
                "ExtractiveAnswerer: max_sentences must be >= 1 and min_relative in [0, 1]"
            )

    @property
    def name(self) -> str:
        return "extractive"

    async def generate(self, question: str, contexts: Sequence[Context]) -> Draft:
        return self.compose(question, contexts)

    def compose(self, question: str, contexts: Sequence[Context]) -> Draft:
        """The answer, synchronously (it is pure and cheap)."""
        wanted = terms(question)
        candidates = [
            _Candidate(rank, position, sentence, context.chunk_id, terms(sentence))
            for rank, context in enumerate(contexts)
            for position, sentence in enumerate(chunk_sentences(context.text))
        ]
        scored = self._scores(wanted, candidates)
        if not scored:
            return Draft(text=NO_ANSWER, no_answer=True)
        scored.sort(key=lambda pair: (-pair[0], pair[1].rank, pair[1].position))
        best = scored[0][0]
        chosen: list[_Candidate] = []
        for score, candidate in scored:
            if len(chosen) == self.max_sentences or score < self.min_relative * best:
                break
            if not any(self._duplicate(candidate, other) for other in chosen):
                chosen.append(candidate)
        return Draft(text="\n".join(f"{c.sentence} §{c.chunk_id}" for c in chosen))

    @staticmethod
    def _scores(
        wanted: frozenset[str], candidates: list[_Candidate]
    ) -> list[tuple[float, _Candidate]]:
        if not wanted or not candidates:
            return []
        n = len(candidates)
        df = Counter(word for c in candidates for word in c.words & wanted)
        average = sum(len(c.words) for c in candidates) / n or 1.0
        scored = []
        for candidate in candidates:
            matched = candidate.words & wanted
            if not matched:
                continue
            weight = sum(math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in matched)
            norm = 0.5 + 0.5 * len(candidate.words) / average
            scored.append((weight / norm, candidate))
        return scored

    def _duplicate(self, a: _Candidate, b: _Candidate) -> bool:
        if a.sentence.casefold() == b.sentence.casefold():
            return True
        union = a.words | b.words
        return bool(union) and len(a.words & b.words) / len(union) >= self.duplicate_overlap
