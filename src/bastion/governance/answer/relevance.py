"""How much a passage bears on a question: query-term coverage, measured with the analyzer
keyword search uses (stemmed words, the BM25 stop list), so that it means the same thing in
every retrieval mode and for every generator.

A question's *topic terms* are its analyzed words without the words that only make it a
question or a request (``what``, ``which``, ``does``, ``must``, ``many``, ``tell me``...) and
without the adjective of ``how long is``, ``how soon must`` (the form of the answer, not its
subject). A sentence of a chunk covers a topic term when the sentence, or a heading it sits
under, contains it: a list item under ``### Code Review Process`` is about code review. Its
*coverage* is the share of topic terms it covers. The document's title is shared by every
sentence of the document, so it only counts to complete a coverage: a sentence that, with its
headings and the title, holds
every topic term covers the question fully ("Finance budget overrun policy?" and the budget
overrun rule of the "Finance Department Policy Manual"); a title that holds a few of them proves
nothing about one sentence. A sentence *bears on* the question when its coverage reaches the
floor and the sentence itself or a heading below the title holds at least one topic term.

A chunk's relevance is the best coverage of one of its sentences that holds a topic term
itself or under a heading below the title; below the floor, the chunk does not enter the
answer's context. :data:`RELEVANCE_FLOOR` and the weights of
:mod:`~bastion.governance.answer.evidence` are chosen on the dev split of the answer evaluation
set and reported on its test split (``bench/answer_eval.py``, ``docs/benchmarks.md``,
``docs/decisions/``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from bastion.core.text import RELEVANCE_FLOOR
from bastion.governance.answer.models import Context
from bastion.governance.answer.text import Passage, chunk_passages, terms

__all__ = [
    "QUESTION_WORDS",
    "RELEVANCE_FLOOR",
    "Coverage",
    "Scored",
    "coverage",
    "question_terms",
    "relevance",
    "scored_passages",
]


_QUESTION_WORDS = (
    "what which who whom whose when where why how whether "
    "do does did is are was were be been being am "
    "can could shall should will would may might must "
    "have has had i we you me us my our your any some many much "
    "please tell explain describe know like want"
)
QUESTION_WORDS = frozenset(_QUESTION_WORDS.split())
"""Words that make a sentence a question or a request without saying what it is about:
closed-class words (pronouns, auxiliaries, question words, ``many``/``much``) and the verbs
of asking (``tell me``, ``explain``, ``I would like to know``)."""

_WORD = re.compile(r"(?u)\b\w\w+\b")


@cache
def _question_stems() -> frozenset[str]:
    return terms(" ".join(QUESTION_WORDS))


def question_terms(question: str) -> frozenset[str]:
    """The topic terms of ``question`` (see the module docstring). A question made only of
    question words keeps all its analyzed words, so that it still has something to match."""
    words = _WORD.findall(question.lower())
    kept = [
        word
        for i, word in enumerate(words)
        if word not in QUESTION_WORDS and not _measure(words, i)
    ]
    topic = terms(" ".join(kept)) - _question_stems()
    return topic or terms(question)


def _measure(words: list[str], i: int) -> bool:
    """True for the adjective of ``how long is``, ``how soon must``: a word right after ``how``
    and right before a question word (``how parental leave works`` keeps ``parental``)."""
    return 0 < i < len(words) - 1 and words[i - 1] == "how" and words[i + 1] in QUESTION_WORDS


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which topic terms a sentence covers."""

    covered: frozenset[str]
    """By the sentence or a heading above it (the document's title aside)."""
    complete: bool
    """Whether the sentence, its headings and the document's title hold every topic term."""
    asked: int
    """How many topic terms the question has."""

    @property
    def share(self) -> float:
        """The share of topic terms covered; 1.0 when the title completes the coverage."""
        if self.complete:
            return 1.0
        return len(self.covered) / self.asked if self.asked else 0.0

    def bears(self, floor: float) -> bool:
        """True when the sentence bears on the question at ``floor``."""
        return bool(self.covered) and self.share >= floor


def coverage(topic: frozenset[str], passage: Passage) -> Coverage:
    """How ``passage`` covers the question's ``topic`` terms."""
    covered = (terms(passage.sentence) & topic).union(*(terms(h) & topic for h in passage.headings))
    complete = bool(covered) and (covered | terms(passage.title)) >= topic
    return Coverage(covered=covered, complete=complete, asked=len(topic))


@dataclass(frozen=True, slots=True)
class Scored:
    """A sentence of one of the contexts, with its coverage."""

    rank: int
    """The context's place in the answer's contexts (0: the best)."""
    position: int
    """The sentence's place in its chunk."""
    passage: Passage
    chunk_id: str
    coverage: Coverage


def scored_passages(topic: frozenset[str], contexts: Sequence[Context]) -> list[Scored]:
    """Every sentence of every context, in context then chunk order, with its coverage."""
    return [
        Scored(rank, position, passage, context.chunk_id, coverage(topic, passage))
        for rank, context in enumerate(contexts)
        for position, passage in enumerate(
            chunk_passages(context.text, context.section or context.title or "")
        )
    ]


def relevance(question: str, context: Context) -> float:
    """How well ``context`` answers ``question``: the best coverage of one of its sentences
    that holds a topic term itself or under a heading below the title (0.0 when none does)."""
    topic = question_terms(question)
    return max(
        (s.coverage.share for s in scored_passages(topic, [context]) if s.coverage.covered),
        default=0.0,
    )
