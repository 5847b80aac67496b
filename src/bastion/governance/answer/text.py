"""Pure text helpers shared by the generators and the verifier: ``§chunk_id`` markers, sentence
splitting (of chunks and of answers), content terms, and the clean-up of model replies.

Markers are ``§`` followed by 8 to 64 id characters (chunk ids are 32 hex digits), so the
section sign of legal texts (``§ 12``, ``§12``) is never mistaken for a citation.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bastion.analysis import Analyzer
from bastion.governance.answer.spelling import fold_spelling

__all__ = [
    "MARKER",
    "Passage",
    "answer_sentences",
    "chunk_passages",
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
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s")
_LABEL = re.compile(r"^\s*(\*\*|__)[^*_]+(\*\*|__)\s*:?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|=+)\s*$")
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_WORDS = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_TABLE_RULE = re.compile(r"^:?-{2,}:?$")


@cache
def _analyzer() -> Analyzer:
    return Analyzer()


def terms(text: str) -> frozenset[str]:
    """Stemmed content words (stop words out): what overlap is measured on, with the very
    analyzer keyword search uses, after British spellings are folded to American ones
    (:func:`~bastion.governance.answer.spelling.fold_spelling`)."""
    return frozenset(_analyzer().analyze(fold_spelling(text)))


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


@dataclass(frozen=True, slots=True)
class Passage:
    """One sentence of a chunk and the headings it sits under."""

    sentence: str
    title: str = ""
    """The document's title (its ``#`` heading, or the first part of the section path)."""
    headings: tuple[str, ...] = ()
    """The headings the sentence sits under, outermost first, below the document's title
    (the chunk's section path, then the headings met in the chunk)."""
    lines: tuple[int, int] = field(default=(0, 0), compare=False)
    """The first and last line of the chunk's text the sentence was read from (0-based,
    inclusive): a table row or a list item is its own line; a prose sentence may span the
    lines of a soft-wrapped paragraph, or share its line with the sentences around it."""


def chunk_sentences(text: str) -> list[str]:
    """The sentences of a chunk, whitespace-normalized, in order (see :func:`chunk_passages`)."""
    return [p.sentence for p in chunk_passages(text)]


_Unit = tuple[str, str, tuple[str, ...], int, tuple[int, int]]


def _prose_units(
    prose: list[tuple[int, str]], title: str, headings: tuple[str, ...]
) -> list[_Unit]:
    """The sentences of a paragraph (its lines joined by one space), each with its lines."""
    if not prose:
        return []
    joined = " ".join(line for _, line in prose)
    starts: list[int] = []
    at = 0
    for _, line in prose:
        starts.append(at)
        at += len(line) + 1

    def line_at(offset: int) -> int:
        i = bisect_right(starts, offset) - 1
        return prose[max(i, 0)][0]

    out: list[_Unit] = []
    begin = 0
    for match in [*_SENTENCE_END.finditer(joined), None]:
        end = len(joined) if match is None else match.start()
        piece = joined[begin:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            first = line_at(begin + lead)
            last = line_at(begin + len(piece.rstrip()) - 1)
            out.append((" ".join(piece.split()), title, headings, 3, (first, last)))
        if match is not None:
            begin = match.end()
    return out


def chunk_passages(text: str, section: str = "") -> list[Passage]:
    """The sentences of a chunk, each with its heading path and its lines, in order.

    Headings, rules and bold-only label lines (``**VP Level**``) are not sentences (they state
    nothing on their own); a table's header row is not either, but each row below it is one
    sentence, its cells named by their column (``Grade: G1; Band minimum: £24,000``); headings
    below the title (``##`` and deeper) set the path of the sentences under them, starting
    from ``section`` (``"Title > Part"``, the chunk's section path, whose first part is the
    title). A list item is a
    sentence of its own, without its bullet, when it has two words or more (other sentences
    need three: shorter pieces are fragments); soft-wrapped prose lines are joined before
    splitting. A question (a sentence ending in ``?``) states nothing and is left out too.
    Each passage keeps the lines of ``text`` it was read from (:attr:`Passage.lines`)."""
    path: list[tuple[int, str]] = [
        (level, name.strip())
        for level, name in enumerate(section.split(" > "), start=1)
        if name.strip() and level > 1
    ]
    title = section.split(" > ", maxsplit=1)[0].strip()
    units: list[_Unit] = []
    prose: list[tuple[int, str]] = []
    header: list[str] | None = None

    def here() -> tuple[str, ...]:
        return tuple(name for _, name in path)

    def flush() -> None:
        units.extend(_prose_units(prose, title, here()))
        prose.clear()

    for number, line in enumerate(text.split("\n")):
        if not line.strip():  # a blank line ends the block: its paragraph and its table
            flush()
            header = None
            continue
        if line.lstrip().startswith("|"):
            flush()
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(_TABLE_RULE.match(c) for c in cells if c):
                continue
            if header is None:
                header = cells
                continue
            units.append((_row(header, cells), title, here(), 2, (number, number)))
            continue
        header = None
        heading = _HEADING.match(line)
        if heading or _RULE.match(line) or _LABEL.match(line):
            flush()
            if heading:
                level = heading.group(1).count("#")
                name = line[heading.end() :].strip().strip("#").strip()
                path[:] = [(lv, n) for lv, n in path if lv < level and n != name]
                if level > 1:
                    path.append((level, name))
                else:
                    title = name
        elif _LIST_ITEM.match(line):
            flush()
            item = " ".join(_LIST_ITEM.sub("", line, count=1).split())
            units.append((item, title, here(), 2, (number, number)))
        else:
            prose.append((number, line.strip()))
    flush()
    passages: list[Passage] = []
    for unit, named, headings, least, lines in units:
        pieces = [(unit, lines)] if least == 3 else _pieces(unit, lines)
        for piece, where in pieces:
            if len(_WORDS.findall(piece)) >= least and not piece.endswith("?"):
                passages.append(Passage(piece, named, headings, where))
    return passages


def _pieces(unit: str, lines: tuple[int, int]) -> list[tuple[str, tuple[int, int]]]:
    """A list item or a table row split into its sentences (all on its one line)."""
    return [(p.strip(), lines) for p in _SENTENCE_END.split(" ".join(unit.split())) if p.strip()]


def _row(header: list[str], cells: list[str]) -> str:
    """A table row as one sentence: each cell after its column's name."""
    named = [
        f"{name}: {cell}" if name else cell
        for name, cell in zip(header + [""] * len(cells), cells, strict=False)
        if cell
    ]
    return "; ".join(named)


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
