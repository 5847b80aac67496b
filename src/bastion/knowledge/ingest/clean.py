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

__all__ = ["clean_text"]

_NEWLINES = re.compile(r"\r\n?|[\f\v\x1c\x1d\x1e\x85\u2028\u2029]")
_SOFT_HYPHEN_BREAK = re.compile("\u00ad[ \t]*\n[ \t]*")
# Control characters (category Cc, but newline and tab), surrogates (Cs) and invisibles.
_DROP = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u00ad\u200b\u2060\ufeff\ufffe]")
# Unicode space separators (category Zs) other than the plain space.
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SPACE_RUN = re.compile(r"(?<=\S) {2,}")


def clean_text(text: str, *, keep_indent: bool = True) -> str:
    """Return ``text`` cleaned as described in the module docstring."""
    text = _NEWLINES.sub("\n", text)
    text = unicodedata.normalize("NFC", text)
    text = _SOFT_HYPHEN_BREAK.sub("", text)
    text = _DROP.sub("", text)
    lines: list[tuple[str, bool]] = []  # (line, is code)
    fence: str | None = None
    for raw in text.split("\n"):
        match = _FENCE.match(raw)
        if fence is not None:
            lines.append((raw.rstrip(), True))
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        line = _clean_line(raw, keep_indent=keep_indent)
        if match:
            fence = match.group(1)
            line = raw.rstrip()
        lines.append((line, match is not None))
    return _squeeze_blank_lines(_join_hyphenated(lines))


def _clean_line(line: str, *, keep_indent: bool) -> str:
    line = (line if line.isascii() else _SPACES.sub(" ", line)).rstrip()
    body = line.lstrip(" ")
    indent = line[: len(line) - len(body)] if keep_indent else ""
    return indent + _SPACE_RUN.sub(" ", body)


def _join_hyphenated(lines: list[tuple[str, bool]]) -> list[str]:
    """Lines with words hyphenated across a line break joined; linear in the text.

    A run of such lines (``"a-\\nb-\\nc-..."``) becomes one line built from pieces; only its
    last three characters, and whether its last word holds a hyphen before its end, are
    tracked: rebuilding and re-splitting the growing line at each join was quadratic."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, code = lines[i]
        i += 1
        if code or not _ends_hyphenated(line):
            out.append(line)
            continue
        pieces, tail = [line], line[-3:]
        compound = "-" in line.rsplit(None, 1)[-1][:-1]  # "state-of-the-": keep the hyphen
        while i < len(lines) and len(tail) >= 2 and tail[-1] == "-" and tail[-2].isalpha():
            following, next_code = lines[i]
            rest = following.lstrip()
            if next_code or not rest or not rest[0].islower():
                break
            if not compound:  # "inter-" + "national"
                pieces[-1], tail = pieces[-1][:-1], tail[:-1]
            pieces.append(rest)
            tail = (tail + rest)[-3:]
            last = rest.rsplit(None, 1)
            compound = "-" in last[-1][:-1] if len(last) > 1 else compound or "-" in rest[:-1]
            i += 1
        out.append("".join(pieces))
    return out


def _ends_hyphenated(line: str) -> bool:
    return len(line) >= 3 and line[-1] == "-" and line[-2].isalpha()


def _squeeze_blank_lines(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if not line.strip():
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)
