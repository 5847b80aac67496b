"""Rows of cell strings -> a Markdown (GFM) table."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["markdown_table"]


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """The first row is the header; short rows are padded; ``|`` and newlines are escaped.

    Empty rows are dropped; a table with no text at all gives ``""``.
    """
    cells = [[_cell(c) for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    padded = [row + [""] * (width - len(row)) for row in cells]
    lines = [_row(padded[0]), _row(["---"] * width)]
    lines.extend(_row(row) for row in padded[1:])
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
