"""Where a document may be cut, and how good each cut is. Pure functions over the text.

A *boundary* is a character position where a unit (heading line, paragraph, list item,
sentence) starts. Each gets a *kind*; each strategy ranks the kinds (:func:`ranks_for`), and
the packer prefers the highest-ranked cut that keeps a chunk big enough. Boundaries always sit
at the first character of a unit, right after whitespace or a sentence mark, so they never
fall inside a word and token counts add up across them.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from bastion.knowledge.chunking.model import HeadingLike, Strategy

__all__ = ["Context", "Kind", "Layout", "analyze", "rank_table", "ranks_for"]


class Kind(IntEnum):
    """What starts at a boundary. Headings are ``HEADING + level``."""

    MID_WORD = 0
    """Between two tokens of one word: only for a word longer than the cap."""
    WORD = 1
    SOFT_LINE = 2
    """A line break inside running prose (hard-wrapped text)."""
    AFTER_HEADING = 3
    """The first line under a heading: cutting here would orphan the heading."""
    SENTENCE = 4
    LINE = 5
    """A list item, table row, quote line or code line."""
    PARAGRAPH = 6
    HEADING = 10


SENTENCE_RANK = 4
"""Lowest rank where an overlap may begin (a whole sentence)."""
HEADING_RANK = 10
"""Ranks at or above this are heading cuts (section strategy carries no overlap over them)."""

_BASE_RANKS = {
    Kind.MID_WORD: 0,
    Kind.WORD: 1,
    Kind.SOFT_LINE: 2,
    Kind.AFTER_HEADING: 2,
    Kind.SENTENCE: 4,
    Kind.LINE: 5,
    Kind.PARAGRAPH: 6,
}


def ranks_for(strategy: Strategy, kind: int) -> int:
    """How much ``strategy`` likes a cut at a boundary of ``kind``."""
    if kind >= Kind.HEADING:
        if strategy is Strategy.SECTION:
            return HEADING_RANK + 6 - (kind - Kind.HEADING)  # level 1 -> 15, level 6 -> 10
        kind = Kind.PARAGRAPH
    rank = _BASE_RANKS[Kind(kind)]
    if strategy is Strategy.SENTENCE and rank > SENTENCE_RANK:
        return SENTENCE_RANK
    return rank


@functools.cache
def rank_table(strategy: Strategy) -> dict[int, int]:
    """:func:`ranks_for` of every kind (headings of levels 1 to 6 included): a look-up per
    boundary, not a call."""
    kinds = [*Kind, *range(Kind.HEADING + 1, Kind.HEADING + 7)]
    return {int(kind): ranks_for(strategy, kind) for kind in kinds}


@dataclass(frozen=True, slots=True)
class Context:
    """Where the scan of a text stopped: what the next text of the same document continues
    (a long document is analyzed a segment at a time)."""

    stack: tuple[tuple[int, str], ...] = ()
    """Open headings, (level, title), outermost first."""
    fence: str | None = None
    """The opening marks of a fenced code block still open."""
    blank_before: bool = True
    under_heading: bool = False
    prose_before: str = ""


@dataclass(frozen=True, slots=True)
class Layout:
    """The boundaries of one text, in order, and its heading paths."""

    positions: list[int]
    """Boundary positions, strictly increasing; the first is 0, the last ``len(text)``."""
    kinds: list[int]
    """Kind of each boundary (:class:`Kind` values; ``HEADING + level`` for headings)."""
    section_starts: list[int]
    """Positions where a heading line starts, increasing."""
    section_paths: list[tuple[str, ...]]
    """Heading path in force from each of ``section_starts`` on."""
    line_starts: list[int]
    """Position where each line starts (line ``n`` starts at ``line_starts[n - 1]``)."""
    end: Context = Context()
    """The scanner's state after the last line (to analyze a following segment)."""

    def line_of(self, position: int) -> int:
        """1-based line holding the character at ``position``."""
        return bisect_right(self.line_starts, position)

    def section_at(self, position: int) -> tuple[str, ...]:
        index = bisect_right(self.section_starts, position) - 1
        return self.section_paths[index] if index >= 0 else ()

    def section_of(self, start: int, end: int) -> tuple[str, ...]:
        """The longest heading path shared by everything in ``[start, end)``."""
        common = self.section_at(start)
        lo = bisect_right(self.section_starts, start)
        hi = bisect_left(self.section_starts, end)
        for path in self.section_paths[lo:hi]:
            size = 0
            for a, b in zip(common, path, strict=False):
                if a != b:
                    break
                size += 1
            common = common[:size]
        return common


# The heading text ends in a non-blank (a shortest text always does), so the closing sequence
# is tried once per run of blanks, not at each blank ("# a" + 20,000 spaces + "x" took 9 s);
# the blanks after the marks are possessive (giving them back never helps).
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]++((?:.*?[^ \t\n])?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BLOCK_LINE = re.compile(r"\s*(?:[-*+>|]|\d{1,9}[.)](?:\s|$))")
_CLOSERS = r"""["'\u201d\u2019\u00bb)\]]*"""
# Western end marks: possessive, and tried only where a run of them starts (a run of n marks
# was rescanned from each of its n positions: quadratic on "!!!!..."). The CJK branch needs its
# backtracking (it ends before the last mark or closer of a line) and is linear as it is.
_SENTENCE = re.compile(
    rf"(?<![.!?\u2026])[.!?\u2026]++{_CLOSERS}+\s++(?=[^\sa-z])"
    rf"|[\u3002\uff01\uff1f]+{_CLOSERS}\s*(?=\S)"
)
_ENDS_SENTENCE = re.compile(rf"[.!?\u2026:\u3002\uff01\uff1f]{_CLOSERS}\s*$")
_WORD_BEFORE = re.compile(r"\w+\Z")
_ABBREVIATIONS = frozenset(
    "al approx ca cf dept dr eq eqs fig figs inc jr ltd mr mrs ms mt no nos p pp prof ref refs "  # noqa: SIM905
    "resp sr st vol vs".split()
)
_ABBREVIATED = max(map(len, _ABBREVIATIONS))


_MARK = re.compile(r"[.!?\u2026\u3002\uff01\uff1f]")
"""A character that can end a sentence: both branches of ``_SENTENCE`` start with one."""


def _sentence_starts(line: str, offset: int) -> list[int]:
    # Every match begins with a mark, so the expression is tried only where one is (found by
    # a plain character class), from left to right past the last match: the matches
    # ``finditer`` gives, without trying the expression at each of the line's characters
    # (a cost per character that adds up on long lines, such as a scientific abstract).
    starts = []
    end = 0
    for mark in _MARK.finditer(line):
        if mark.start() < end:
            continue
        match = _SENTENCE.match(line, mark.start())
        if match is None:
            continue
        end = match.end()
        if match.group()[0] == ".":
            dot = match.start()
            # the word before the dot, seen through a window one longer than the longest
            # abbreviation: a word that fills it is no abbreviation and not one letter
            word = _WORD_BEFORE.search(line, max(0, dot - _ABBREVIATED - 1), dot)
            if word and (len(word.group()) == 1 or word.group().lower() in _ABBREVIATIONS):
                continue  # "e.g.", "J. Smith", "Fig. 2", "et al."
        if end < len(line):
            starts.append(offset + end)
    return starts


def _closes(match: re.Match[str] | None, fence: str) -> bool:
    return match is not None and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)


def _heading_map(
    lines: list[str], headings: Sequence[HeadingLike] | None, fence: str | None = None
) -> dict[int, tuple[int, str]]:
    """0-based line index -> (level, title): the parser's headings, or ATX lines outside code
    (``fence``: a code block open before the first line)."""
    if headings is not None:
        return {
            h.line - 1: (min(max(h.level, 1), 6), h.text.strip())
            for h in headings
            if 1 <= h.line <= len(lines)
        }
    found: dict[int, tuple[int, str]] = {}
    for index, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence is not None:
            fence = None if _closes(fence_match, fence) else fence
        elif fence_match:
            fence = fence_match.group(1)
        elif (atx := _ATX.fullmatch(line.rstrip("\r"))) and (atx.group(2) or "").strip("#").strip():
            found[index] = (len(atx.group(1)), atx.group(2).strip())
    return found


class _Scanner:
    """Walks the lines once, remembering what the line before was."""

    def __init__(self, heading_at: dict[int, tuple[int, str]], context: Context) -> None:
        self.heading_at = heading_at
        self.kinds: dict[int, int] = {}
        self.stack: list[tuple[int, str]] = list(context.stack)
        # headings open from before the text hold from its first character
        self.section_starts: list[int] = [0] if self.stack else []
        self.section_paths: list[tuple[str, ...]] = (
            [tuple(t for _, t in self.stack)] if self.stack else []
        )
        self.fence: str | None = context.fence
        self.blank_before = context.blank_before
        self.under_heading = context.under_heading
        self.prose_before = context.prose_before

    def context(self) -> Context:
        return Context(
            tuple(self.stack), self.fence, self.blank_before, self.under_heading, self.prose_before
        )

    def mark(self, position: int, kind: int) -> None:
        if self.kinds.get(position, -1) < kind:
            self.kinds[position] = kind

    def line(self, index: int, line: str, line_start: int) -> None:
        if not line.strip():
            self.blank_before = True
            return
        first = line_start + len(line) - len(line.lstrip())
        kind, prose = self._classify(index, line, first)
        self.mark(first, kind)
        if prose:
            for position in _sentence_starts(line, line_start):
                self.mark(position, Kind.SENTENCE)
        self.prose_before = line if prose else ""
        self.blank_before = False
        self.under_heading = kind >= Kind.HEADING

    def _classify(self, index: int, line: str, first: int) -> tuple[int, bool]:
        fence_match = _FENCE.match(line)
        if self.fence is not None:  # inside code: every line is a line, blank or not
            self.fence = None if _closes(fence_match, self.fence) else self.fence
            return Kind.LINE, False
        if index in self.heading_at:
            level, title = self.heading_at[index]
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            self.stack.append((level, title))
            self.section_starts.append(first)
            self.section_paths.append(tuple(t for _, t in self.stack))
            return Kind.HEADING + level, False
        if fence_match:
            self.fence = fence_match.group(1)
            return (Kind.AFTER_HEADING if self.under_heading else Kind.PARAGRAPH), False
        if self.under_heading:
            return Kind.AFTER_HEADING, True
        if self.blank_before:
            return Kind.PARAGRAPH, True
        if _BLOCK_LINE.match(line):
            return Kind.LINE, True
        if _ENDS_SENTENCE.search(self.prose_before):
            return Kind.SENTENCE, True
        return Kind.SOFT_LINE, True


def analyze(
    text: str, headings: Sequence[HeadingLike] | None = None, *, context: Context | None = None
) -> Layout:
    """Find the boundaries and heading paths of ``text`` (Markdown-ish, lines end in ``\\n``).

    ``headings`` (from a parser) replaces the detection of ``#`` headings when given.
    ``context`` continues the scan of the text before (``Layout.end`` of the previous segment
    of the same document: open headings, an open code block).
    """
    lines = text.split("\n")
    start = context or Context()
    scanner = _Scanner(_heading_map(lines, headings, start.fence), start)
    line_starts = []
    offset = 0
    for index, line in enumerate(lines):
        line_starts.append(offset)
        scanner.line(index, line, offset)
        offset += len(line) + 1
    kinds = scanner.kinds
    kinds.pop(0, None)
    kinds.pop(len(text), None)
    inner = sorted(kinds)
    positions = [0, *inner, len(text)] if text else [0]
    edge: int = Kind.HEADING
    kind_list = [edge, *(kinds[p] for p in inner), edge] if text else [edge]
    return Layout(
        positions,
        kind_list,
        scanner.section_starts,
        scanner.section_paths,
        line_starts,
        scanner.context(),
    )
