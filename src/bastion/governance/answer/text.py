"""Pure text helpers shared by the generators and the verifier: ``§chunk_id`` markers, sentence
splitting (of chunks and of answers), content terms, and the clean-up of model replies.

Markers are ``§`` followed by 8 to 64 id characters (chunk ids are 32 hex digits), so the
section sign of legal texts (``§ 12``, ``§12``) is never mistaken for a citation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from bastion.knowledge.index.analysis import Analyzer

__all__ = [
    "MARKER",
    "answer_sentences",
    "chunk_sentences",
    "cited_ids",
    "json_object",
    "number_markers",
    "numbers",
    "strip_reasoning",
    "terms",
]

MARKER = re.compile(r"[\[(]?§([A-Za-z0-9_-]{8,64})[\])]?")
"""A citation marker, optionally bracketed: ``§<chunk_id>`` or ``[§<chunk_id>]``."""

_LEADING_MARKERS = re.compile(r"^(?:[\s,;]*[\[(]?§[A-Za-z0-9_-]{8,64}[\])]?)+[\s,;.]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|=+)\s*$")
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_WORDS = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@cache
def _analyzer() -> Analyzer:
    return Analyzer()


def terms(text: str) -> frozenset[str]:
    """Stemmed content words (stop words out): what overlap is measured on, with the very
    analyzer keyword search uses."""
    return frozenset(_analyzer().analyze(text))


def numbers(text: str) -> frozenset[str]:
    """The figures in ``text`` (``15``, ``2.5``, ``1,000``, ``10:30``), markers left out."""
    return frozenset(_NUMBER.findall(MARKER.sub(" ", text)))


def cited_ids(text: str) -> tuple[str, ...]:
    """Chunk ids of every marker in ``text``, first appearance first, without repeats."""
    return tuple(dict.fromkeys(MARKER.findall(text)))


def strip_reasoning(text: str) -> str:
    """A model reply without ``<think>``-style reasoning blocks (an unclosed one runs to the
    end): chain-of-thought never reaches an answer."""
    return _REASONING.sub("", text).strip()


def number_markers(text: str, numbers: Mapping[str, int]) -> str:
    """``§<chunk_id>`` markers replaced by ``[n]`` for the ids in ``numbers`` (others kept)."""

    def swap(match: re.Match[str]) -> str:
        n = numbers.get(match.group(1))
        return match.group(0) if n is None else f"[{n}]"

    return MARKER.sub(swap, text)


def chunk_sentences(text: str) -> list[str]:
    """The sentences of a chunk, whitespace-normalized, in order. Headings, rules and table
    rows are left out (they state nothing on their own); a list item is a sentence of its own,
    without its bullet; soft-wrapped prose lines are joined before splitting."""
    units: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        prose: list[str] = []
        for line in block.splitlines():
            if not line.strip():
                continue
            if _HEADING.match(line) or _RULE.match(line) or line.lstrip().startswith("|"):
                units.append(" ".join(prose))
                prose = []
            elif _LIST_ITEM.match(line):
                units.append(" ".join(prose))
                prose = []
                units.append(_LIST_ITEM.sub("", line, count=1))
            else:
                prose.append(line.strip())
        units.append(" ".join(prose))
    sentences: list[str] = []
    for unit in units:
        for piece in _SENTENCE_END.split(" ".join(unit.split())):
            if len(_WORDS.findall(piece)) >= 3:
                sentences.append(piece.strip())
    return sentences


def answer_sentences(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """An answer split into sentences, each with the chunk ids it cites. Markers that open a
    piece (``"… minutes. §abc Next …"``) belong to the sentence before them, so both
    ``sentence §id.`` and ``sentence. §id`` attach the citation to its sentence."""
    pieces: list[str] = []
    for line in text.splitlines():
        pieces += [p for p in _SENTENCE_END.split(line.strip()) if p]
    sentences: list[str] = []
    for piece in pieces:
        lead = _LEADING_MARKERS.match(piece)
        rest = piece
        if lead is not None and sentences:
            sentences[-1] += " " + lead.group(0).strip()
            rest = piece[lead.end() :]
        if rest.strip():
            sentences.append(rest)
    return [(" ".join(MARKER.sub(" ", s).split()), cited_ids(s)) for s in sentences]


def json_object(text: str) -> Any:
    """The first JSON object in a model reply (code fences and reasoning ignored), or None."""
    body = strip_reasoning(text)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(body[start : end + 1])
    except ValueError:
        return None
