"""PDF: text per page with pypdf, running headers and footers removed.

pypdf gives text without structure, so there are no headings and tables stay as the text pypdf
lays out. Lines that repeat at the top or bottom of most pages (page headers, footers, page
numbers; compared with digits masked, so ``Page 3 of 9`` matches ``Page 4 of 9``) are removed.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pypdf
from pypdf.errors import FileNotDecryptedError

from bastion.knowledge.ingest.errors import DocumentTooLargeError, ParseError
from bastion.knowledge.ingest.formats.common import translated
from bastion.knowledge.ingest.metadata import iso_date, one_line, split_keywords
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["parse_pdf", "strip_running_lines"]

_EDGE_LINES = 3
"""How many non-blank lines at the top and at the bottom of a page may be running lines."""
_DIGITS = re.compile(r"\d+")


def parse_pdf(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Text of every page, joined by blank lines; document properties as metadata."""
    with translated(
        where, "PDF", (FileNotDecryptedError, "is an encrypted PDF; ingest an unencrypted copy")
    ):
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(f"{where} is an encrypted PDF; ingest an unencrypted copy")
        count = len(reader.pages)
    if count > limits.max_pdf_pages:
        raise DocumentTooLargeError(
            f"{where} has {count} pages, over the {limits.max_pdf_pages}-page limit; split it"
        )
    pages: list[str] = []
    unreadable: list[int] = []
    for number in range(count):
        try:
            pages.append(reader.pages[number].extract_text() or "")
        except Exception:  # noqa: BLE001 - any failure inside pypdf means "this page is unreadable"
            unreadable.append(number + 1)
            pages.append("")
    if count and len(unreadable) == count:
        raise ParseError(f"{where}: no page of this PDF could be read; check the file")
    meta = _properties(reader)
    meta["pages"] = count
    if unreadable:
        meta["unreadable_pages"] = unreadable
    return Extraction(
        text="\n\n".join(strip_running_lines(pages)),
        structured=False,
        keep_indent=False,
        title=one_line(meta.get("title")),
        author=one_line(meta.get("author")),
        date=meta.get("created") or meta.get("modified"),
        keywords=split_keywords(meta.get("keywords")),
        metadata=meta,
    )


def strip_running_lines(pages: Sequence[str]) -> list[str]:
    """Remove lines found at the top (or bottom) of more than half the pages (two at least).

    Only the first and last ``_EDGE_LINES`` non-blank lines of a page are candidates, so a
    sentence that happens to repeat in the body is kept. Lines match when equal up to case and
    spacing, or when equal with digits masked and one of their numbers moves with the page
    (``Page 3 of 9``, ``- 4 -``), so ``Section 2`` at the top of several pages is not a page
    number.
    """
    if len(pages) < 2:
        return list(pages)
    split = [page.split("\n") for page in pages]
    needed = max(2, len(pages) // 2 + 1)
    running = [_running(split, edge, needed) for edge in (0, 1)]
    cleaned: list[str] = []
    for lines in split:
        edges = _edges(lines)
        drop = {i for edge in (0, 1) for i in edges[edge] if _is_running(lines[i], running[edge])}
        cleaned.append("\n".join(line for i, line in enumerate(lines) if i not in drop))
    return cleaned


def _running(split: list[list[str]], edge: int, needed: int) -> tuple[set[str], set[str]]:
    """(exact keys, masked keys) of the running lines at one edge (0 top, 1 bottom)."""
    exact: Counter[str] = Counter()
    masked: dict[str, dict[int, list[int]]] = {}
    for page, lines in enumerate(split):
        keys = {_key(lines[i]) for i in _edges(lines)[edge]}
        exact.update(keys)
        for key in keys:
            numbers = [int(n) for n in _DIGITS.findall(key)]
            if numbers:
                masked.setdefault(_DIGITS.sub("#", key), {}).setdefault(page, numbers)
    with_page_numbers = {
        key for key, seen in masked.items() if len(seen) >= needed and _tracks_pages(seen)
    }
    return {key for key, n in exact.items() if n >= needed}, with_page_numbers


def _tracks_pages(seen: dict[int, list[int]]) -> bool:
    """Some number in the line is ``page index + constant`` on every page it appears on."""
    width = min(len(numbers) for numbers in seen.values())
    return any(
        len({numbers[j] - page for page, numbers in seen.items()}) == 1 for j in range(width)
    )


def _is_running(line: str, running: tuple[set[str], set[str]]) -> bool:
    key = _key(line)
    return key in running[0] or _DIGITS.sub("#", key) in running[1]


def _edges(lines: list[str]) -> tuple[list[int], list[int]]:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return filled[:_EDGE_LINES], filled[-_EDGE_LINES:]


def _key(line: str) -> str:
    return " ".join(line.casefold().split())


_PROPERTIES = {
    "/Title": "title",
    "/Author": "author",
    "/Subject": "subject",
    "/Keywords": "keywords",
    "/Creator": "creator",
    "/Producer": "producer",
    "/CreationDate": "created",
    "/ModDate": "modified",
}


def _properties(reader: pypdf.PdfReader) -> dict[str, Any]:
    try:
        info = reader.metadata
        raw = {name: info.get(key) for key, name in _PROPERTIES.items()} if info else {}
    except Exception:  # noqa: BLE001 - broken /Info: the text is still worth having
        return {}
    found: dict[str, Any] = {}
    for name, value in raw.items():
        text = one_line(value)
        if text and name in ("created", "modified"):
            found[name] = iso_date(text) or text
        elif text:
            found[name] = text
    return found
