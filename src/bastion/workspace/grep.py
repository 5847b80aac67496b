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

import re
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
_WHOLE_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[^):]*-[^):]*m")
"""Syntax whose meaning changes when a line is searched inside a buffer of lines (the start
or end of the whole text; multi-line mode turned off): such a pattern is matched per line.
Conservative: an escaped backslash before ``A`` counts too, which only costs speed."""


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
    """The file's lines, decoded (invalid UTF-8 replaced); empty when nothing matched."""
    hits: list[int]
    """0-based indices of matching lines, in order."""
    stopped: bool
    """True when the budget ran out before the last line."""


@dataclass(frozen=True, slots=True)
class LineMatcher:
    """A compiled grep pattern: a predicate over one line, and a budgeted scan of a file.

    A file is searched whole (one ``find`` or RE2 call per matching line, not one per line)
    whenever its lines are exactly its ``\\n``-separated runs; ``whole`` is then the pattern
    compiled for that: multi-line anchors, and never matching a newline (RE2 ``never_nl``),
    so a match found in the buffer lies inside one line. Each line it finds is checked again
    with the per-line program, so the answer is the per-line answer."""

    pattern: str
    regex: bool
    ignore_case: bool
    cost: int
    """Work per byte: the RE2 program size, or 1 for plain text."""
    compiled: Any = field(repr=False, compare=False)
    """The RE2 program, or ``None`` for plain text."""
    whole: Any = field(default=None, repr=False, compare=False)
    """The RE2 program for a whole buffer of lines, or ``None`` (plain text, or a pattern
    whose meaning depends on the line being the whole text: ``\\A``, ``\\z``, ``(?-m)``)."""
    needle: bytes | None = field(default=None, repr=False, compare=False)
    """For plain text matched with its case: its UTF-8 bytes, which every file holding a
    matching line holds as they are (see :func:`_needle`); ``None`` otherwise."""

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

    def scan(self, data: bytes, budget: Budget, limit: int | None = None) -> Scan:
        """The lines of ``data`` that match, spending at most ``budget`` (charged here);
        with ``limit``, the scan stops once it has found ``limit + 1`` matching lines."""
        if self.needle is not None and self.needle not in data:
            return Scan([], [], False)  # no line can match: nothing decoded or split
        start = time.monotonic()
        deadline = start + budget.seconds
        cap = None if limit is None else limit + 1
        buf = None if self.compiled is not None and self.whole is None else _line_buffer(data)
        if buf is None:
            lines = data.decode("utf-8", "replace").splitlines()
            hits, stopped = self._scan_lines(lines, deadline, cap)
        else:
            if self.compiled is None:
                hits, stopped = self._find_text(buf, deadline, cap)
            else:
                hits, stopped = self._find_regex(buf, deadline, cap)
            lines = _split(buf) if hits else []
        budget.seconds -= time.monotonic() - start
        return Scan(lines, hits, stopped)

    def _scan_lines(
        self, lines: list[str], deadline: float, cap: int | None
    ) -> tuple[list[int], bool]:
        """Line by line: for text whose line breaks are not all ``\\n``."""
        hits: list[int] = []
        folded = self.pattern.casefold()
        pending = _CHECK_WORK  # read the clock before the first line
        for i, line in enumerate(lines):
            pending += (len(line) + 1) * self.cost
            if pending >= _CHECK_WORK or not i & 1023:
                pending = 0
                if time.monotonic() >= deadline:
                    return hits, True
            if self.compiled is None:
                hit = folded in line.casefold() if self.ignore_case else self.pattern in line
            else:
                found = self._matches(line, deadline)
                if found is None:
                    return hits, True
                hit = found
            if hit:
                hits.append(i)
                if cap is not None and len(hits) >= cap:
                    break
        return hits, False

    def _find_text(self, buf: bytes, deadline: float, cap: int | None) -> tuple[list[int], bool]:
        """Plain text in a whole buffer: exact (the pattern never holds a line break that
        a line could match, and case folding never makes or removes one)."""
        hay: bytes | str
        needle: bytes | str
        if not self.ignore_case:
            hay, needle = buf, self.pattern.encode()
        elif buf.isascii():
            folded = self.pattern.casefold()
            if not folded.isascii():
                return [], False
            hay, needle = buf.lower(), folded.encode()
        else:
            hay, needle = buf.decode().casefold(), self.pattern.casefold()
        hits: list[int] = []
        nl = b"\n" if isinstance(hay, bytes) else "\n"
        if nl in needle:  # type: ignore[operator]
            return hits, False
        pos = line = 0
        while True:
            if time.monotonic() >= deadline:
                return hits, True
            found = hay.find(needle, pos)  # type: ignore[arg-type]
            if found < 0:
                return hits, False
            line += hay.count(nl, pos, found)  # type: ignore[arg-type]
            hits.append(line)
            if cap is not None and len(hits) >= cap:
                return hits, False
            end = hay.find(nl, found)  # type: ignore[arg-type]
            if end < 0:
                return hits, False
            pos, line = end + 1, line + 1

    def _find_regex(self, buf: bytes, deadline: float, cap: int | None) -> tuple[list[int], bool]:
        """RE2 over a whole buffer, in chunks of whole lines of at most the window's bytes;
        a line longer than a window alone is matched as :meth:`_matches` does."""
        search = self.whole.search
        window = WINDOW_WORK // self.cost
        size = len(buf)
        hits: list[int] = []
        pos = line = 0
        while pos < size:
            if time.monotonic() >= deadline:
                return hits, True
            end = min(pos + window, size)
            if end < size:
                cut = buf.rfind(b"\n", pos, end)
                if cut < 0:  # one line longer than a window: searched in windows
                    stop = buf.find(b"\n", pos)
                    stop = size if stop < 0 else stop
                    found = self._matches(buf[pos:stop].decode(), deadline)
                    if found is None:
                        return hits, True
                    if found:
                        hits.append(line)
                        if cap is not None and len(hits) >= cap:
                            return hits, False
                    pos, line = stop + 1, line + 1
                    continue
                end = cut + 1
            match = search(buf, pos, end)
            if match is None:
                line += buf.count(b"\n", pos, end)
                pos = end
                continue
            at = match.start()
            if at >= size and buf.endswith(b"\n"):
                break  # the empty end after the last line break: no line
            line += buf.count(b"\n", pos, at)
            before = buf.rfind(b"\n", pos, at)
            start = pos if before < 0 else before + 1
            stop = buf.find(b"\n", at)
            stop = size if stop < 0 else stop
            found = self._matches(buf[start:stop].decode(), deadline)  # the per-line answer
            if found is None:
                return hits, True
            if found:
                hits.append(line)
                if cap is not None and len(hits) >= cap:
                    return hits, False
            pos, line = stop + 1, line + 1
        return hits, False

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


_OTHER_BREAKS = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_WIDE_BREAKS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
"""What ``str.splitlines`` also breaks lines at (in UTF-8), besides ``\\n`` and ``\\r\\n``."""


def _line_buffer(data: bytes) -> bytes | None:
    """``data`` as valid UTF-8 whose lines (as ``str.splitlines`` makes them from the decoded
    text) are exactly its ``\\n``-separated runs; ``None`` when another line break is in it."""
    if not data.isascii():
        try:
            data.decode()
        except UnicodeDecodeError:
            data = data.decode("utf-8", "replace").encode()
        if any(mark in data for mark in _WIDE_BREAKS):
            return None
    if b"\r" in data:  # one byte: memchr; a two-byte search costs ten times more
        data = data.replace(b"\r\n", b"\n")
    if any(mark in data for mark in _OTHER_BREAKS):
        return None
    return data


def _split(buf: bytes) -> list[str]:
    """The lines of a buffer from :func:`_line_buffer` (``str.splitlines`` of its text)."""
    lines = buf.decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


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
        needle = None if ignore_case else _needle(pattern)
        return LineMatcher(pattern, regex, ignore_case, cost=1, compiled=None, needle=needle)
    # A probe with little memory first: a program far over the cap then fails in
    # milliseconds instead of being built in full (up to ~0.5 s holding the GIL).
    probe = _compile(pattern, ignore_case, _PROBE_MAX_MEM)
    size = max(probe.programsize, probe.reverseprogramsize)
    if size > MAX_PROGRAM_SIZE:
        raise _too_complex(pattern, size)
    if probe.reverseprogramsize < 0:  # the reverse program did not fit the probe
        raise _too_complex(pattern, None)
    compiled = _compile(pattern, ignore_case, _RE2_MAX_MEM)  # room for the DFA
    whole = None
    if _WHOLE_TEXT_ANCHORS.search(pattern) is None:
        try:
            whole = _compile("(?m)" + pattern, ignore_case, _RE2_MAX_MEM, never_nl=True)
        except InvalidPatternError:
            whole = None  # matched line by line
        else:
            size = max(size, whole.programsize, whole.reverseprogramsize)
    return LineMatcher(pattern, regex, ignore_case, max(size, 1), compiled, whole)


_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _needle(pattern: str) -> bytes | None:
    """The bytes a file must hold for a line of it to hold ``pattern`` (matched with its
    case), or ``None`` when no such bytes are sure. A line is text decoded from the file, with
    invalid UTF-8 replaced by U+FFFD, and split at line breaks; so a pattern that holds
    neither U+FFFD nor a line break, found in a line, is found in the file's bytes as its
    own UTF-8 (a valid UTF-8 string found in valid UTF-8 starts and ends on whole
    characters, none of them a replacement)."""
    if "\ufffd" in pattern or not _LINE_BREAKS.isdisjoint(pattern):
        return None
    return pattern.encode()


def _compile(pattern: str, ignore_case: bool, max_mem: int, *, never_nl: bool = False) -> Any:
    options = re2.Options()
    options.never_nl = never_nl
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
    ).needing("regex", False)


def clip(text: str) -> str:
    """One output line, cut to a readable length."""
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [...]"
    return text
