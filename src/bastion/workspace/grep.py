"""Line matching for grep: literal text, or RE2 regular expressions (linear time, no hangs).

Python's ``re`` backtracks, so a pattern like ``(a+)+$`` on a long line can take hours. RE2
guarantees time linear in the input, and its memory is capped here, so a hostile pattern
cannot hang the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import re2

from bastion.core.errors import InvalidPatternError

__all__ = ["GrepMatch", "GrepResult", "compile_matcher"]

MAX_PATTERN_CHARS = 1000
MAX_LINE_CHARS = 500
_RE2_MAX_MEM = 8 << 20


@dataclass(frozen=True, slots=True)
class GrepMatch:
    """One matching line (or a context line around one)."""

    path: str
    line: int
    """1-based line number."""
    text: str
    is_context: bool = False

    def format(self) -> str:
        sep = "-" if self.is_context else ":"
        return f"{self.path}{sep}{self.line}{sep} {self.text}"


@dataclass(frozen=True, slots=True)
class GrepResult:
    """Matches in file order, and what was cut or skipped."""

    matches: tuple[GrepMatch, ...]
    files_searched: int
    files_matched: int
    truncated: bool = False
    """True when a per-file or total cap cut the output."""
    skipped: tuple[str, ...] = field(default=())
    """Files not searched, with the reason (``/big.log: over the size limit``)."""

    def format(self) -> str:
        lines = [m.format() for m in self.matches]
        if self.truncated:
            lines.append("[... more matches not shown: narrow the pattern or the path]")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def compile_matcher(pattern: str, *, regex: bool, ignore_case: bool) -> Callable[[str], bool]:
    """A predicate over one line of text."""
    if not isinstance(pattern, str) or pattern == "":
        raise InvalidPatternError("empty search pattern; give the text to look for")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidPatternError(f"pattern longer than {MAX_PATTERN_CHARS} characters; shorten it")
    if not regex:
        if ignore_case:
            folded = pattern.casefold()
            return lambda line: folded in line.casefold()
        return lambda line: pattern in line
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.max_mem = _RE2_MAX_MEM
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        raise InvalidPatternError(
            f"invalid regular expression {pattern[:60]!r}: {exc}; RE2 syntax has no "
            "backreferences or lookaround (pass regex=False for plain text)"
        ) from exc
    search = compiled.search
    return lambda line: search(line) is not None


def clip(text: str) -> str:
    """One output line, cut to a readable length."""
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [...]"
    return text
