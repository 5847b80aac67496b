"""What the answer workflow returns: the answer, its citations, the contexts it was built from,
how it was verified and what the guardrails did. Small frozen records with ``to_dict`` for the
wire; none of them holds reasoning (no chain-of-thought ever leaves the workflow)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bastion.governance.answer.text import number_markers

__all__ = [
    "NO_ANSWER",
    "NO_CONTEXT",
    "REFUSED",
    "WITHHELD",
    "Answer",
    "AnswerStatus",
    "Check",
    "Citation",
    "Context",
    "DroppedChunk",
    "GuardrailOutcome",
    "GuardrailReport",
    "Verification",
    "guarded",
    "merge_spans",
    "withheld_note",
]

NO_CONTEXT = "No document you can read answers this question."
"""The answer when no chunk the asker may read answers the question: it says why in words
that reveal nothing of what the asker may not read (whether such a document exists or not)."""

NO_ANSWER = "The documents you can read that were found do not answer this question."
"""The answer when chunks passed the evidence floor but the generator found no answer in them."""


REFUSED = "The question was refused by the guardrails."
"""The answer when the question guardrail refuses the question (see ``guardrails``)."""

WITHHELD = "The answer was withheld by the guardrails."
"""The answer when the answer guardrail finds it unsafe and offers no redaction."""


def _kinds(dropped: Sequence[DroppedChunk]) -> str:
    """The kinds of reason (``injection`` of ``injection:jailbreak``), first seen first."""
    kinds = dict.fromkeys(r.split(":", 1)[0].strip() for d in dropped for r in d.reasons)
    return ", ".join(k for k in kinds if k) or "no reason given"


def guarded(dropped: Sequence[DroppedChunk]) -> str:
    """The answer when authorized chunks matched but the chunk guardrail withheld every one:
    it names the kinds of guardrail, never the content."""
    return (
        f"Authorized content matched, but it was withheld by a guardrail ({_kinds(dropped)}); "
        "nothing else answers the question."
    )


def withheld_note(dropped: Sequence[DroppedChunk]) -> str:
    """The note of an answer some of whose chunks the chunk guardrail withheld."""
    return f"{len(dropped)} chunk(s) withheld by a guardrail ({_kinds(dropped)})"


class AnswerStatus(StrEnum):
    ANSWERED = "answered"
    NO_CONTEXT = "no_context"
    """No authorized chunk matched: the answer is :data:`NO_CONTEXT`."""
    NO_ANSWER = "no_answer"
    """Chunks were found, but none supports an answer: :data:`NO_ANSWER`."""
    REFUSED = "refused"
    """The question guardrail refused the question; nothing was retrieved."""
    WITHHELD = "withheld"
    """The answer guardrail found the answer unsafe and offered no redaction."""
    GUARDED = "guarded"
    """Authorized chunks matched, but the chunk guardrail withheld all of them: the answer is
    :func:`guarded`'s sentence, naming the kinds of guardrail."""


_WHY = {
    AnswerStatus.NO_CONTEXT: "no document you can read answers this question.",
    AnswerStatus.NO_ANSWER: "the documents you can read that were found do not answer it.",
    AnswerStatus.REFUSED: "the guardrails refused the question.",
    AnswerStatus.WITHHELD: "the guardrails withheld the answer.",
    AnswerStatus.GUARDED: "a guardrail withheld the matching content.",
}


class Check(StrEnum):
    """The checks verification runs; :attr:`Verification.failed` names those that failed."""

    CITATIONS = "citations"
    """Every ``§chunk_id`` names one of the answer's contexts, still readable by the asker."""
    SUPPORT = "support"
    """Every sentence that states something is supported by a chunk it cites."""
    RELEVANCE = "relevance"
    """The answer addresses the question (it covers enough of the question's topic terms)."""
    JUDGE = "judge"
    """The chat-model judge, when one was given, finds every sentence supported."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Context:
    """One chunk as it entered (or was considered for) the answer's context."""

    chunk_id: str
    doc_id: str
    path: str
    start_line: int
    end_line: int
    """1-based, inclusive line range of the chunk in its file."""
    text: str
    """The chunk's full text (the asker may read it: it passed the guard twice)."""
    score: float
    """The score contexts are ordered by: the reranker's when one ran, else retrieval's."""
    retrieval_score: float
    """The score search gave the chunk (the mode's own scale), kept when a reranker rescored."""
    section: str = ""
    title: str | None = None
    tokens: int = 0
    """Tokens of the context block (marker included), counted when the context is assembled."""
    truncated: bool = False
    """True when the block was cut to fit the budget (only ever the best chunk, alone)."""
    similarities: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """The bi-encoder's cosine of each sentence (as :func:`~.evidence.passage_text` writes
    it) with the question, then with each of its parts; empty without vectors."""
    term_similarities: Mapping[str, float] = field(default_factory=dict)
    """For each topic term of the question that no retrieved chunk holds: the best cosine of
    the question's word for it with one of this chunk's sentences; empty without vectors."""
    line_map: tuple[int, ...] = ()
    """The file line of each line of ``text``, when the retriever knows it and it is not
    ``start_line`` plus the line's place (cleaning squeezed blank lines or joined a word
    hyphenated across lines); empty otherwise."""

    def file_lines(self, first: int, last: int) -> tuple[int, int]:
        """Lines ``first`` to ``last`` of ``text`` (0-based, inclusive) as the 1-based,
        inclusive line range of the file, kept within the chunk's own range."""
        lo, hi = min(first, last), max(first, last)
        if self.line_map:
            top = len(self.line_map) - 1
            a, b = self.line_map[min(lo, top)], self.line_map[min(hi, top)]
        else:
            a, b = self.start_line + lo, self.start_line + hi
        a = min(max(a, self.start_line), self.end_line)
        return a, min(max(b, a), self.end_line)

    @property
    def marker(self) -> str:
        return f"§{self.chunk_id}"

    def block(self) -> str:
        """The block a generator sees: the ``§chunk_id`` marker line, then the text."""
        return f"{self.marker}\n{self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "lines": [self.start_line, self.end_line],
            "section": self.section,
            "title": self.title,
            "score": self.score,
            "retrieval_score": self.retrieval_score,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "text": self.text,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Citation:
    """A chunk the answer cites (always one of the answer's contexts), and the lines of its
    file that hold the text the answer took from it."""

    chunk_id: str
    doc_id: str
    path: str
    start_line: int
    end_line: int
    """1-based, inclusive: the first and the last line of the text taken from the chunk (the
    whole chunk when the taken text could not be told apart)."""
    spans: tuple[tuple[int, int], ...] = ()
    """Each stretch of lines taken (first, last), in file order, adjacent ones merged; one
    stretch ``(start_line, end_line)`` when empty."""
    chunk_start_line: int = 0
    chunk_end_line: int = 0
    """The cited chunk's own line range."""

    @classmethod
    def of(cls, context: Context, spans: Sequence[tuple[int, int]] = ()) -> Citation:
        """The citation of ``context`` for the file lines ``spans`` it gave the answer (the
        whole chunk when none is given)."""
        merged = merge_spans(spans) or ((context.start_line, context.end_line),)
        return cls(
            chunk_id=context.chunk_id,
            doc_id=context.doc_id,
            path=context.path,
            start_line=merged[0][0],
            end_line=max(b for _, b in merged),
            spans=merged,
            chunk_start_line=context.start_line,
            chunk_end_line=context.end_line,
        )

    @property
    def lines(self) -> str:
        """``"12-14"`` (``"3"`` for one line; ``"3, 9-10"`` for stretches apart)."""
        stretches = self.spans or ((self.start_line, self.end_line),)
        return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in stretches)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "lines": [self.start_line, self.end_line],
            "spans": [list(s) for s in self.spans or ((self.start_line, self.end_line),)],
            "chunk_lines": [self.chunk_start_line, self.chunk_end_line],
        }


def merge_spans(spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``spans`` sorted, overlapping or adjacent ones merged (``(3, 4), (5, 5)`` is ``(3, 5)``)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted((min(a, b), max(a, b)) for a, b in spans):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class Verification:
    """What verification found. ``passed`` is False whenever any check failed; a failure is
    reported, never smoothed over."""

    passed: bool
    problems: tuple[str, ...] = ()
    """One line per failed check; sentence numbers and chunk ids, never document text."""
    sentences: int = 0
    """Answer sentences that make a claim (have content words)."""
    supported: int = 0
    """Of those, how many the deterministic overlap check found supported by a cited chunk."""
    judge: str | None = None
    """``"passed"`` or ``"failed"`` when a chat-model judge also checked; None otherwise."""
    failed: tuple[Check, ...] = ()
    """The checks that failed, in :class:`Check` order (empty when ``passed``)."""
    addresses_question: bool | None = None
    """Whether the answer addresses the question; None when it was not asked (no question
    given, or an answer that makes no claim)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failed": [c.value for c in self.failed],
            "problems": list(self.problems),
            "sentences": self.sentences,
            "supported": self.supported,
            "addresses_question": self.addresses_question,
            "judge": self.judge,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class GuardrailOutcome:
    """A guardrail's verdict on one text, as the answer reports it."""

    safe: bool
    reasons: tuple[str, ...] = ()
    redacted: bool = False
    """True when the guardrail's redacted text was used instead of the original."""

    def to_dict(self) -> dict[str, Any]:
        return {"safe": self.safe, "reasons": list(self.reasons), "redacted": self.redacted}


@dataclass(frozen=True, kw_only=True, slots=True)
class DroppedChunk:
    """A chunk the chunk guardrail kept out of the context, and why."""

    chunk_id: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "reasons": list(self.reasons)}


@dataclass(frozen=True, kw_only=True, slots=True)
class GuardrailReport:
    """What the guardrails did to the question, the chunks and the answer."""

    question: GuardrailOutcome | None = None
    chunks_dropped: tuple[DroppedChunk, ...] = ()
    answer: GuardrailOutcome | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": None if self.question is None else self.question.to_dict(),
            "chunks_dropped": [d.to_dict() for d in self.chunks_dropped],
            "answer": None if self.answer is None else self.answer.to_dict(),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """A governed answer. ``answer`` carries ``§chunk_id`` markers after the sentences they
    support; :meth:`format` renders them as numbered references for a terminal."""

    answer: str
    citations: tuple[Citation, ...] = ()
    contexts: tuple[Context, ...] = ()
    status: AnswerStatus = AnswerStatus.ANSWERED
    verification: Verification | None = None
    """None when verification was switched off (``verify=False``): not verified, not passed."""
    guardrails: GuardrailReport | None = None
    """None when no guardrails were given."""
    mode: str = ""
    """The search mode retrieval used (after any fallback)."""
    generator: str = ""
    """``"extractive"`` or ``"chat:<model>"``."""
    reranker: str = "none"
    notes: tuple[str, ...] = field(default=())
    """Plain facts about the run worth showing (a mode fallback, a truncated context)."""

    @property
    def verified(self) -> bool:
        """True only for an answer that cites documents and whose verification ran and passed
        (every citation an authorized context, every sentence supported): a refusal cites
        nothing, so it is never "verified"."""
        return (
            self.status is AnswerStatus.ANSWERED
            and bool(self.citations)
            and self.verification is not None
            and self.verification.passed
        )

    @property
    def verdict(self) -> str:
        """One line saying what happened, for a person: the CLI and the web page show it."""
        if self.status is not AnswerStatus.ANSWERED:
            return f"Not answered: {_WHY[self.status]}"
        if self.verification is None:
            return "Not verified: verification was switched off."
        if not self.verification.passed:
            failed = ", ".join(c.value for c in self.verification.failed) or "verification"
            return f"Not verified: the {failed} check failed."
        if not self.citations:
            return "Not verified: the answer cites no document."
        return (
            "Verified: every citation is a document you can read, and it supports the "
            "sentence that cites it."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "status": self.status.value,
            "citations": [c.to_dict() for c in self.citations],
            "contexts": [c.to_dict() for c in self.contexts],
            "verification": None if self.verification is None else self.verification.to_dict(),
            "guardrails": None if self.guardrails is None else self.guardrails.to_dict(),
            "mode": self.mode,
            "generator": self.generator,
            "reranker": self.reranker,
            "notes": list(self.notes),
        }

    def format(self) -> str:
        """The answer with ``[n]`` references, then the numbered citations (``path:lines``)
        and the verification verdict: for a person at a terminal."""
        numbers = {c.chunk_id: i for i, c in enumerate(self.citations, start=1)}
        lines = [number_markers(self.answer, numbers)]
        if self.citations:
            lines.append("")
            lines += [f"[{numbers[c.chunk_id]}] {c.path}:{c.lines}" for c in self.citations]
        lines.append("")
        if self.status is not AnswerStatus.ANSWERED:
            lines.append(self.verdict[0].lower() + self.verdict[1:])
        elif self.verification is None:
            lines.append("not verified (verification was switched off)")
        elif self.verification.passed and not self.citations:
            lines.append("not verified: the answer cites no document")
        elif self.verification.passed:
            lines.append(
                "verified: citations are authorized contexts; every sentence is supported"
                + (
                    "; the answer addresses the question"
                    if self.verification.addresses_question
                    else ""
                )
            )
        else:
            failed = ", ".join(c.value for c in self.verification.failed)
            lines.append(f"VERIFICATION FAILED ({failed}):" if failed else "VERIFICATION FAILED:")
            lines += [f"  - {p}" for p in self.verification.problems]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
