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

__all__ = ["line_map"]

_KEY = 24
_WINDOW = 500
"""Source lines looked at past the last match (bounds the work on unmatched lines)."""


_NOT_ALNUM = re.compile(r"[\W_]+")
"""Everything but letters and digits (``\\w`` is ``str.isalnum`` plus the underscore)."""


def _key(line: str) -> str:
    return _NOT_ALNUM.sub("", line.casefold())[:_KEY]


def line_map(source: str, clean: str) -> list[int]:
    """``result[i]`` is the 1-based source line of clean line ``i + 1``."""
    src_keys = [_key(line) for line in source.split("\n")]
    out: list[int] = []
    cursor = 0
    last = 0  # 0-based source line of the previous clean line
    for line in clean.split("\n"):
        key = _key(line)
        found = None
        if key:
            for j in range(cursor, min(cursor + _WINDOW, len(src_keys))):
                candidate = src_keys[j]
                if candidate and (key.startswith(candidate) or candidate.startswith(key)):
                    found = j
                    break
        if found is None:
            guess = last + 1 if out else 0
            out.append(min(guess, max(len(src_keys) - 1, 0)) + 1)
            last = out[-1] - 1
            continue
        out.append(found + 1)
        last = found
        cursor = found + 1
    return out
