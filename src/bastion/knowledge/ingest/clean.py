"""Text cleaning: one pure function applied to every parser's output.

* line endings -> ``\\n``; form feeds and Unicode line/paragraph separators -> ``\\n``
* NFC normalization
* control and invisible characters removed (newline and tab kept); soft hyphens removed
* per line: Unicode spaces -> ``" "``, runs of spaces inside the line -> one space, trailing
  spaces stripped; leading indentation kept (Markdown lists and code depend on it) unless the
  parser says it is layout noise (PDF)
* words hyphenated across a line break joined: ``inter-\\nnational`` -> ``international``; a
  compound already holding a hyphen keeps it (``state-of-the-\\nart`` -> ``state-of-the-art``)
* at most one blank line in a row; no blank lines at the start or end

Inside fenced code blocks (``````` or ``~~~``) lines are only right-stripped.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

__all__ = ["clean_text"]

_NEWLINES = re.compile(r"\r\n?|[\f\v\x1c\x1d\x1e\x85\u2028\u2029]")
_SOFT_HYPHEN_BREAK = re.compile("\u00ad[ \t]*\n[ \t]*")
# Control characters (category Cc, but newline and tab), surrogates (Cs) and invisibles.
_DROP = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u00ad\u200b\u2060\ufeff\ufffe]")
# Unicode space separators (category Zs) other than the plain space.
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SPACE_RUN = re.compile(r"(?<=\S) {2,}")
_PLAIN = bytes(range(0x20, 0x7F)) + b"\t\n"
"""The ASCII characters the character steps leave alone (deleted from a text's bytes, what
is left is what a step might change: ``\r``, other controls)."""


def clean_text(text: str, *, keep_indent: bool = True) -> str:
    """Return ``text`` cleaned as described in the module docstring.

    Lines flow through the steps one at a time (no list of every line, nor a tuple per line,
    is built), and the result is assembled in blocks: cleaning a text of many megabytes holds
    little more than the text and its result."""
    lines: Iterable[str]
    if len(text) <= 2 * _PIECE:  # one piece: its lines as a list (cheaper for small texts)
        lines = _character_steps(text).split("\n")
    else:
        lines = _split(_normalized(text))
    return _squeeze_blank_lines(_join_hyphenated(_marked_lines(lines, keep_indent=keep_indent)))


def _character_steps(piece: str) -> str:
    if piece.isascii() and not piece.encode("ascii").translate(None, _PLAIN):
        return piece  # printable ASCII, tabs and line breaks: no step changes anything
    piece = _NEWLINES.sub("\n", piece)
    piece = unicodedata.normalize("NFC", piece)
    if "\u00ad" in piece:
        piece = _SOFT_HYPHEN_BREAK.sub("", piece)
    return _DROP.sub("", piece)


_PIECE = 1 << 20
"""Characters normalized at a time."""
_SAFE_CUT = re.compile("\n(?![ \t])")
"""A line break no character pattern of the first steps reaches across: NFC composes nothing
with a line break, ``\\r\\n`` ends at it, and a soft hyphen's break swallows blanks after it."""


def _normalized(text: str) -> Iterator[str]:
    """The text after the character steps (line endings, NFC, soft hyphens, invisibles), in
    pieces that end at a line break (no second copy of a large text at any time)."""
    start = 0
    while start < len(text):
        cut = len(text)
        if len(text) - start > 2 * _PIECE:
            found = _SAFE_CUT.search(text, start + _PIECE)
            while found is not None and _after_soft_hyphen(text, found.start()):
                found = _SAFE_CUT.search(text, found.end())
            cut = found.end() if found is not None else len(text)
        yield _character_steps(text[start:cut])
        start = cut


def _after_soft_hyphen(text: str, newline: int) -> bool:
    """Is the line break at ``newline`` part of a soft hyphen's break (``\\u00ad[ \\t]*\\n``)?"""
    before = text[max(0, newline - 64) : newline].rstrip(" \t")
    return before.endswith("\u00ad") or len(before) == 0


def _split(pieces: Iterable[str]) -> Iterator[str]:
    """The lines of the text the pieces make up, one at a time (``text.split("\\n")``)."""
    carry = ""
    for piece in pieces:
        start = 0
        while (end := piece.find("\n", start)) >= 0:
            yield carry + piece[start:end] if carry else piece[start:end]
            carry = ""
            start = end + 1
        carry += piece[start:]
    yield carry


def _marked_lines(lines: Iterable[str], *, keep_indent: bool) -> Iterator[tuple[str, bool]]:
    """Each line, cleaned unless inside a fenced code block, and whether it is code."""
    fence: str | None = None
    for raw in lines:
        match = _FENCE.match(raw)
        if fence is not None:
            yield raw.rstrip(), True
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        line = _clean_line(raw, keep_indent=keep_indent)
        if match:
            fence = match.group(1)
            line = raw.rstrip()
        yield line, match is not None


def _clean_line(line: str, *, keep_indent: bool) -> str:
    line = (line if line.isascii() else _SPACES.sub(" ", line)).rstrip()
    body = line.lstrip(" ")
    indent = line[: len(line) - len(body)] if keep_indent else ""
    return indent + (_SPACE_RUN.sub(" ", body) if "  " in body else body)


def _join_hyphenated(lines: Iterable[tuple[str, bool]]) -> Iterator[str]:
    """Lines with words hyphenated across a line break joined; linear in the text.

    A run of such lines (``"a-\\nb-\\nc-..."``) becomes one line built from pieces; only its
    last three characters, and whether its last word holds a hyphen before its end, are
    tracked: rebuilding and re-splitting the growing line at each join was quadratic."""
    source = iter(lines)
    ahead = next(source, None)
    while ahead is not None:
        line, code = ahead
        ahead = next(source, None)
        if code or not _ends_hyphenated(line):
            yield line
            continue
        pieces, tail = [line], line[-3:]
        compound = "-" in line.rsplit(None, 1)[-1][:-1]  # "state-of-the-": keep the hyphen
        while ahead is not None and len(tail) >= 2 and tail[-1] == "-" and tail[-2].isalpha():
            following, next_code = ahead
            rest = following.lstrip()
            if next_code or not rest or not rest[0].islower():
                break
            if not compound:  # "inter-" + "national"
                pieces[-1], tail = pieces[-1][:-1], tail[:-1]
            pieces.append(rest)
            tail = (tail + rest)[-3:]
            last = rest.rsplit(None, 1)
            compound = "-" in last[-1][:-1] if len(last) > 1 else compound or "-" in rest[:-1]
            ahead = next(source, None)
        yield "".join(pieces)


def _ends_hyphenated(line: str) -> bool:
    return len(line) >= 3 and line[-1] == "-" and line[-2].isalpha()


_BLOCK = 4096
"""Lines joined into one string at a time while the result is assembled."""


def _squeeze_blank_lines(lines: Iterable[str]) -> str:
    """At most one blank line in a row, none at the start or the end."""
    blocks: list[str] = []
    out: list[str] = []
    started = blank = False
    for line in lines:
        if not line.strip():
            blank = started
            continue
        if blank:
            out.append("")
            blank = False
        out.append(line)
        started = True
        if len(out) >= _BLOCK:
            blocks.append("\n".join(out))
            out = []
    if out:
        blocks.append("\n".join(out))
    return "\n".join(blocks)
