"""Glob patterns over virtual paths, matched in linear-ish time (no regex backtracking).

Patterns are NFC-normalized like paths: ``cafe`` + U+0301 and ``caf`` + U+00E9 are one pattern.

Syntax, per segment: ``*`` (any run of characters except ``/``), ``?`` (one character),
``[abc]`` / ``[a-z]`` / ``[!abc]`` (a class). A whole segment ``**`` matches zero or more
segments, so ``/docs/**`` matches ``/docs`` itself and everything below it. ``*`` matches names
that start with a dot too: a deny rule on ``/secret/*`` also covers ``/secret/.env``.

Matching uses the two-pointer wildcard algorithm (backtrack only to the last star) at the
segment level; each segment pattern is compiled once to a regular expression in which every
run between two stars is an atomic group taking the first place it fits (``(?>.*?run)``, as
``fnmatch`` does), so a hostile pattern such as ``*a*a*a*a*b`` costs at most
O(len(pattern) x len(name)) instead of exponential time.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from bastion.core.errors import InvalidPatternError
from bastion.core.paths import VPath

__all__ = ["Glob"]

MAX_PATTERN_CHARS = 1024

# A token of a segment pattern: a literal character, "?" (any one char), "*" (any run),
# or a character class (chars, ranges, negated).
_STAR = ("*",)
_ANY = ("?",)


@dataclass(frozen=True, slots=True)
class _Class:
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def matches(self, ch: str) -> bool:
        hit = ch in self.chars or any(lo <= ch <= hi for lo, hi in self.ranges)
        return hit != self.negated


_Token = str | tuple[str] | _Class
_SegmentPattern = tuple[_Token, ...]
_DOUBLE_STAR = "**"


def _compile_segment(segment: str) -> _SegmentPattern:
    tokens: list[_Token] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            if not tokens or tokens[-1] != _STAR:
                tokens.append(_STAR)
            i += 1
        elif ch == "?":
            tokens.append(_ANY)
            i += 1
        elif ch == "[":
            end = segment.find(
                "]", i + 2 if i + 1 < len(segment) and segment[i + 1] in "!^" else i + 1
            )
            if end == -1:
                tokens.append("[")
                i += 1
                continue
            body = segment[i + 1 : end]
            negated = body[:1] in ("!", "^")
            if negated:
                body = body[1:]
            chars: set[str] = set()
            ranges: list[tuple[str, str]] = []
            j = 0
            while j < len(body):
                if j + 2 < len(body) and body[j + 1] == "-":
                    ranges.append((body[j], body[j + 2]))
                    j += 3
                else:
                    chars.add(body[j])
                    j += 1
            tokens.append(_Class(frozenset(chars), tuple(ranges), negated))
            i = end + 1
        else:
            tokens.append(ch)
            i += 1
    return tuple(tokens)


def _token_regex(token: _Token) -> str:
    if token == _ANY:
        return "."
    if isinstance(token, _Class):
        body = "".join(re.escape(c) for c in sorted(token.chars))
        body += "".join(f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in token.ranges if lo <= hi)
        if not body:
            return "." if token.negated else "(?!)"
        return f"[{'^' if token.negated else ''}{body}]"
    assert isinstance(token, str)
    return re.escape(token)


def _segment_regex(tokens: _SegmentPattern) -> re.Pattern[str]:
    """The segment pattern as a regular expression for ``fullmatch``: runs between stars
    are atomic and lazy (the first place a fixed-length run fits is always as good as any
    later one), so matching never backtracks into an earlier run."""
    runs: list[list[str]] = [[]]
    for token in tokens:
        if token == _STAR:
            runs.append([])
        else:
            runs[-1].append(_token_regex(token))
    parts = ["".join(runs[0])]
    if len(runs) > 1:
        parts.extend(f"(?>.*?{''.join(run)})" for run in runs[1:-1])
        parts.append(".*" + "".join(runs[-1]))
    return re.compile(f"(?s:{''.join(parts)})")  # flags inline: the pattern stands alone


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled glob over path segments. Build one with :meth:`compile`."""

    pattern: str
    segments: tuple[_SegmentPattern | str, ...]
    _regexes: tuple[re.Pattern[str] | None, ...] = field(
        default=(), init=False, repr=False, compare=False
    )
    _ends: tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...] | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """For a pattern with at most one ``**``: the segments before it and those after it
    (``None``: no ``**``, a match has exactly the segments before); else ``None``."""

    def __post_init__(self) -> None:
        regexes = tuple(
            None if seg == _DOUBLE_STAR else _segment_regex(seg)  # type: ignore[arg-type]
            for seg in self.segments
        )
        object.__setattr__(self, "_regexes", regexes)
        stars = [i for i, seg in enumerate(self.segments) if seg == _DOUBLE_STAR]
        if len(stars) <= 1:
            cut = stars[0] if stars else len(regexes)
            head = tuple(r for r in regexes[:cut] if r is not None)
            tail = tuple(r for r in regexes[cut + 1 :] if r is not None) if stars else None
            object.__setattr__(self, "_ends", (head, tail))

    @classmethod
    def compile(cls, pattern: str) -> Glob:
        """Compile an absolute pattern (``/docs/**/*.md``); a relative one is taken from ``/``."""
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPatternError("empty glob pattern; try '**/*.md'")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise InvalidPatternError(f"glob pattern longer than {MAX_PATTERN_CHARS} characters")
        if "\x00" in pattern or "\\" in pattern:
            raise InvalidPatternError("glob pattern contains NUL or a backslash; use '/' only")
        if any("\ud800" <= ch <= "\udfff" for ch in pattern):
            raise InvalidPatternError("glob pattern contains a lone surrogate, which is not text")
        # Paths are NFC-normalized when parsed; a pattern typed in another form (NFD, as some
        # editors and macOS file names produce) must name the same paths.
        pattern = unicodedata.normalize("NFC", pattern)
        segments: list[_SegmentPattern | str] = []
        for raw in pattern.split("/"):
            if raw in ("", "."):
                continue
            if raw == "..":
                raise InvalidPatternError("glob pattern may not contain '..'")
            if raw == _DOUBLE_STAR:
                if not segments or segments[-1] != _DOUBLE_STAR:
                    segments.append(_DOUBLE_STAR)
                continue
            segments.append(_compile_segment(raw))
        return cls(pattern, tuple(segments))

    @property
    def literal_prefix(self) -> VPath:
        """The longest leading run of plain segments: where a walk can start."""
        parts: list[str] = []
        for segment in self.segments:
            if segment == _DOUBLE_STAR or not all(isinstance(t, str) for t in segment):
                break
            parts.append("".join(str(t) for t in segment))
        return VPath(tuple(parts))

    @property
    def max_depth(self) -> int | None:
        """How many segments a match can have, or ``None`` when ``**`` makes it unbounded."""
        if _DOUBLE_STAR in self.segments:
            return None
        return len(self.segments)

    @property
    def name_pattern(self) -> re.Pattern[str] | None:
        """The pattern the last name of every match matches whole, or ``None`` when any name
        may (the last segment is ``**``): for a store to skip files by their names alone
        (``core.listings.Sought``)."""
        return self._regexes[-1] if self._regexes else None

    def name_may_match(self, name: str) -> bool:
        """False when no path whose last segment is ``name`` can match: a quick test before
        :meth:`matches` (a last segment that is not ``**`` must match the last name)."""
        last = self._regexes[-1] if self._regexes else None
        return last is None or last.fullmatch(name) is not None

    def matches(self, path: VPath) -> bool:
        parts = path.parts
        ends = self._ends
        if ends is not None:  # at most one "**": its ends alone decide, each part tried once
            head, tail = ends
            n, k = len(parts), len(head)
            if n != k if tail is None else n < k + len(tail):
                return False
            for i in range(k):
                if not head[i].fullmatch(parts[i]):
                    return False
            if tail:
                for j, regex in enumerate(tail, n - len(tail)):
                    if not regex.fullmatch(parts[j]):
                        return False
            return True
        segs = self.segments
        regexes = self._regexes
        s = p = 0
        star = -1
        mark = 0
        while p < len(parts):
            if s < len(segs) and segs[s] == _DOUBLE_STAR:
                star, mark = s, p
                s += 1
            elif s < len(segs) and regexes[s].fullmatch(parts[p]):  # type: ignore[union-attr]
                s += 1
                p += 1
            elif star != -1:
                s = star + 1
                mark += 1
                p = mark
            else:
                return False
        while s < len(segs) and segs[s] == _DOUBLE_STAR:
            s += 1
        return s == len(segs)

    def covers(self, directory: VPath) -> bool:
        """True when ``directory`` and every path under it match (``/docs/**`` covers
        ``/docs`` and ``/docs/a``; ``/docs/*`` covers neither): what a deny rule must do to
        hide a whole tree."""
        parts = directory.parts
        segments = self.segments
        for i, part in enumerate(parts):
            if i >= len(segments):
                return False
            seg = segments[i]
            if seg == _DOUBLE_STAR:  # it covers what is below only when nothing follows it
                return i == len(segments) - 1
            if not self._regexes[i].fullmatch(part):  # type: ignore[union-attr]
                return False
        rest = segments[len(parts) :]
        return bool(rest) and all(seg == _DOUBLE_STAR for seg in rest)

    def could_match_below(self, directory: VPath) -> bool:
        """False when no path under ``directory`` can match (prunes a walk)."""
        parts = directory.parts
        for i, part in enumerate(parts):
            if i >= len(self.segments):
                return False
            seg = self.segments[i]
            if seg == _DOUBLE_STAR:
                return True
            if not self._regexes[i].fullmatch(part):  # type: ignore[union-attr]
                return False
        return len(self.segments) > len(parts)
