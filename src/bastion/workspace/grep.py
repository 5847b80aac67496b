"""Line matching for grep: literal text, or RE2 regular expressions, with bounded work.

Python's ``re`` backtracks, so a pattern like ``(a+)+$`` on a long line can take hours. RE2
runs in time linear in the input, but the constant is the size of the compiled program: a
counted repetition such as ``(\\w|\\s){1,999}`` compiles to 7,000 instructions and, once the
DFA runs out of memory, costs that much per character. So every grep is bounded three ways:

- **program size**: a regular expression that compiles to more than
  :data:`MAX_PROGRAM_SIZE` RE2 instructions (either direction) is refused with
  :class:`~bastion.core.errors.InvalidPatternError`; compiling is probed first with a
  small RE2 ``max_mem``, so even a huge program is refused in milliseconds;
- **work per call into RE2**: one call scans at most :data:`WINDOW_WORK` units of work
  (bytes times program size); a longer line is searched in windows that overlap by an
  eighth, so only a complex pattern on a line of megabytes is ever windowed;
- **time**: matching stops once :data:`GREP_BUDGET_S` seconds of matching are spent in one
  grep call; the result is then flagged ``budget_exhausted`` (and ``truncated``).

Matching runs in a worker thread (RE2 releases the GIL), so the event loop keeps serving other
callers while one grep works; see ``docs/grep.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import re2

from bastion.core.errors import InvalidPatternError

__all__ = [
    "GREP_BUDGET_S",
    "MAX_PROGRAM_SIZE",
    "Budget",
    "GrepMatch",
    "GrepResult",
    "LineMatcher",
    "compile_matcher",
]

MAX_PATTERN_CHARS = 1000
MAX_LINE_CHARS = 500
MAX_PROGRAM_SIZE = 2000
"""Most RE2 instructions a grep regular expression may compile to (forward or reverse)."""
GREP_BUDGET_S = 5.0
"""Seconds of matching one grep call may spend before it stops with a flagged result."""
WINDOW_WORK = 1 << 27
"""Most work (UTF-8 bytes x program size, ~0.1 s at worst) one RE2 call may do: a longer
line is searched in windows of ``WINDOW_WORK // size`` bytes, each overlapping the next by
an eighth, so a match shorter than that eighth is never missed."""
INLINE_WORK = 1 << 20
"""Below this much work (bytes x program size) a file is matched inline, not in a thread."""
_RE2_MAX_MEM = 8 << 20
_PROBE_MAX_MEM = 256 << 10  # builds any program under the cap, refuses one far over it fast
_CHECK_WORK = 1 << 22  # work between clock reads (a few milliseconds at worst)


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
    """True when a per-file or total cap, or the time budget, cut the output."""
    skipped: tuple[str, ...] = field(default=())
    """Files not searched, with the reason (``/big.log: over the size limit``)."""
    budget_exhausted: bool = False
    """True when matching stopped because the time budget ran out: files after the last
    match shown, and lines after it in its file, may hold matches that are not reported."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the command line's ``--json`` and the HTTP API's body)."""
        return {
            "matches": [
                {"path": m.path, "line": m.line, "text": m.text, "context": m.is_context}
                for m in self.matches
            ],
            "files_searched": self.files_searched,
            "files_matched": self.files_matched,
            "truncated": self.truncated,
            "budget_exhausted": self.budget_exhausted,
            "skipped": list(self.skipped),
        }

    def format(self) -> str:
        lines = [m.format() for m in self.matches]
        if self.budget_exhausted:
            lines.append(
                "[... search stopped: its matching time budget ran out; "
                "narrow the pattern or the path]"
            )
        elif self.truncated:
            lines.append("[... more matches not shown: narrow the pattern or the path]")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


@dataclass(slots=True)
class Budget:
    """The matching time one grep call may still spend; shared by its files in turn."""

    seconds: float = field(default_factory=lambda: GREP_BUDGET_S)
    """Seconds of matching left (:data:`GREP_BUDGET_S` when the grep call starts)."""

    @property
    def exhausted(self) -> bool:
        return self.seconds <= 0


@dataclass(frozen=True, slots=True)
class Scan:
    """What matching one file found."""

    lines: list[str]
    """The file's lines, decoded (invalid UTF-8 replaced)."""
    hits: list[int]
    """0-based indices of matching lines, in order."""
    stopped: bool
    """True when the budget ran out before the last line."""


@dataclass(frozen=True, slots=True)
class LineMatcher:
    """A compiled grep pattern: a predicate over one line, and a budgeted scan of a file."""

    pattern: str
    regex: bool
    ignore_case: bool
    cost: int
    """Work per byte: the RE2 program size, or 1 for plain text."""
    compiled: Any = field(repr=False, compare=False)
    """The RE2 program, or ``None`` for plain text."""

    def __call__(self, line: str) -> bool:
        """Whether ``line`` matches (no budget: for short lines and tests)."""
        if self.compiled is None:
            if self.ignore_case:
                return self.pattern.casefold() in line.casefold()
            return self.pattern in line
        return self._matches(line, None) is True

    def inline(self, data: bytes) -> bool:
        """Whether scanning ``data`` is cheap enough to do on the event loop."""
        return len(data) * self.cost <= INLINE_WORK

    def scan(self, data: bytes, budget: Budget) -> Scan:
        """The lines of ``data`` that match, spending at most ``budget`` (charged here)."""
        start = time.monotonic()
        deadline = start + budget.seconds
        lines = data.decode("utf-8", "replace").splitlines()
        hits: list[int] = []
        stopped = False
        folded = self.pattern.casefold()
        pending = _CHECK_WORK  # read the clock before the first line
        for i, line in enumerate(lines):
            pending += (len(line) + 1) * self.cost
            if pending >= _CHECK_WORK or not i & 1023:
                pending = 0
                if time.monotonic() >= deadline:
                    stopped = True
                    break
            if self.compiled is None:
                hit = folded in line.casefold() if self.ignore_case else self.pattern in line
            else:
                found = self._matches(line, deadline)
                if found is None:
                    stopped = True
                    break
                hit = found
            if hit:
                hits.append(i)
        budget.seconds -= time.monotonic() - start
        return Scan(lines, hits, stopped)

    def _matches(self, line: str, deadline: float | None) -> bool | None:
        """RE2 search of one line, in windows when it is long; ``None`` when out of time."""
        assert self.compiled is not None
        search = self.compiled.search
        window = WINDOW_WORK // self.cost
        if len(line) * 4 <= window:  # at most ``window`` bytes once encoded
            return search(line) is not None
        data = line.encode("utf-8", "surrogatepass")
        if len(data) <= window:
            return search(data) is not None
        step = window - window // 8
        pos = 0
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                return None
            end = _char_start(data, min(pos + window, len(data)))
            if search(data, pos, end) is not None:
                return True
            if end == len(data):
                return False
            pos = _char_start(data, pos + step)


def _char_start(data: bytes, index: int) -> int:
    """``index`` moved forward to the start of a UTF-8 character (or the end)."""
    while index < len(data) and data[index] & 0xC0 == 0x80:
        index += 1
    return index


def compile_matcher(pattern: str, *, regex: bool, ignore_case: bool) -> LineMatcher:
    """Compile a grep pattern; a bad or too complex one raises InvalidPatternError.

    Compiling takes milliseconds (a probe with a small memory cap refuses a program far over
    the cap before it is built in full) but holds the GIL: call this off the event loop."""
    if not isinstance(pattern, str) or pattern == "":
        raise InvalidPatternError("empty search pattern; give the text to look for")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidPatternError(f"pattern longer than {MAX_PATTERN_CHARS} characters; shorten it")
    if any("\ud800" <= c <= "\udfff" for c in pattern):
        raise InvalidPatternError("pattern holds a lone surrogate, which is not text; remove it")
    if not regex:
        return LineMatcher(pattern, regex, ignore_case, cost=1, compiled=None)
    # A probe with little memory first: a program far over the cap then fails in
    # milliseconds instead of being built in full (up to ~0.5 s holding the GIL).
    probe = _compile(pattern, ignore_case, _PROBE_MAX_MEM)
    size = max(probe.programsize, probe.reverseprogramsize)
    if size > MAX_PROGRAM_SIZE:
        raise _too_complex(pattern, size)
    if probe.reverseprogramsize < 0:  # the reverse program did not fit the probe
        raise _too_complex(pattern, None)
    compiled = _compile(pattern, ignore_case, _RE2_MAX_MEM)  # room for the DFA
    return LineMatcher(pattern, regex, ignore_case, cost=max(size, 1), compiled=compiled)


def _compile(pattern: str, ignore_case: bool, max_mem: int) -> Any:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.max_mem = max_mem
    options.log_errors = False
    options.never_capture = True
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        if "too large" in str(exc):
            raise _too_complex(pattern, None) from exc
        raise InvalidPatternError(
            f"invalid regular expression {pattern[:60]!r}: {exc}; RE2 syntax has no "
            "backreferences or lookaround (pass regex=False for plain text)"
        ).needing("regex", False) from exc


def _too_complex(pattern: str, size: int | None) -> InvalidPatternError:
    program = f"{size} RE2 instructions" if size is not None else "an oversized RE2 program"
    return InvalidPatternError(
        f"regular expression {pattern[:60]!r} is too complex ({program}, limit "
        f"{MAX_PROGRAM_SIZE}); use smaller counted repetitions ({{1,999}} -> +) or fewer "
        "alternatives, or pass regex=False for plain text"
    )


def clip(text: str) -> str:
    """One output line, cut to a readable length."""
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [...]"
    return text
