"""Map lines of a document's clean text back to lines of its source file.

Cleaning drops front matter, collapses blank lines and spaces, and joins words hyphenated
across lines, so line 3 of the clean text may be line 9 of the file. For text formats (Markdown,
plain text) :func:`line_map` aligns the two greedily: each non-blank clean line is matched to
the next source line whose letters and digits it starts with (or that start with it). A line
that cannot be matched keeps the offset of the line before it. For PDF, DOCX and HTML there is
no meaningful source line, and hits point into the extracted text instead.
"""

from __future__ import annotations

import re
from array import array
from collections import deque
from collections.abc import Iterator

__all__ = ["chunk_line_map", "line_map"]

_KEY = 24
_WINDOW = 500
"""Source lines looked at past the last match (bounds the work on unmatched lines)."""


_NOT_ALNUM = re.compile(r"[\W_]+")
"""Everything but letters and digits (``\\w`` is ``str.isalnum`` plus the underscore)."""
_HEAD = 4 * _KEY
"""Characters of a line looked at for its key (more only when they hold too few letters)."""


def _key(line: str) -> str:
    # casefold and the removal work character by character, so the key of a prefix is a
    # prefix of the key: a long line's key comes from its head alone
    key = _NOT_ALNUM.sub("", line[:_HEAD].casefold())
    if len(key) < _KEY and len(line) > _HEAD:
        key = _NOT_ALNUM.sub("", line.casefold())
    return key[:_KEY]


def _lines(text: str) -> Iterator[str]:
    """``text.split("\\n")`` one line at a time (no list of every line of a large text)."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def line_map(source: str, clean: str) -> array[int]:
    """``result[i]`` is the 1-based source line of clean line ``i + 1``. Source lines are
    read as the match moves forward (only a window of keys is held)."""
    total = source.count("\n") + 1
    src = _lines(source)
    window: deque[str] = deque()
    base = 0  # source line of window[0]
    out = array("i")
    cursor = 0
    last = 0  # 0-based source line of the previous clean line
    for line in _lines(clean):
        key = _key(line)
        found = None
        if key:
            while base < cursor:  # lines before the cursor are never looked at again
                window.popleft()  # (the cursor is at most one past the window's last line)
                base += 1
            stop = min(cursor + _WINDOW, total)
            while base + len(window) < stop:
                window.append(_key(next(src)))
            for j in range(cursor, stop):
                candidate = window[j - base]
                if candidate and (key.startswith(candidate) or candidate.startswith(key)):
                    found = j
                    break
        if found is None:
            guess = last + 1 if out else 0
            out.append(min(guess, max(total - 1, 0)) + 1)
            last = out[-1] - 1
            continue
        out.append(found + 1)
        last = found
        cursor = found + 1
    return out


def chunk_line_map(source: str, start_line: int, end_line: int, text: str) -> tuple[int, ...]:
    """The 1-based file line of each line of a chunk's ``text``, the chunk covering lines
    ``start_line`` to ``end_line`` of ``source`` (the file's text): the chunk's lines aligned
    with that stretch of the file (:func:`line_map`). Empty when the chunk has as many lines as
    its range (then line ``i`` of the chunk is ``start_line + i``)."""
    if text.count("\n") + 1 == end_line - start_line + 1:
        return ()
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    stretch = "\n".join(source.split("\n")[start_line - 1 : end_line])
    return tuple(start_line - 1 + line for line in line_map(stretch, text))
