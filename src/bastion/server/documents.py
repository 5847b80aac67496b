"""A document's text as search indexes it, for ``read`` with ``format=document``: the page
previews a PDF or a Word file as its text, as ``bastion cat`` shows it."""

from __future__ import annotations

from bastion.knowledge.ingest import IngestError, parse_document

__all__ = ["document_text", "window"]


def document_text(data: bytes, path: str) -> str:
    """The text the index reads from ``data`` (the file at ``path``); a file that is not a
    document after all (or has no text) is shown as it is, decoded as UTF-8."""
    try:
        return parse_document(data, path).text
    except IngestError:
        return data.decode("utf-8", "replace")


def window(text: str, offset: int, limit: int | None) -> str:
    """Lines of ``text`` as ``read`` pages them: skip ``offset`` lines (``< 0``: the last
    ``-offset`` lines), then at most ``limit``."""
    lines = text.splitlines(keepends=True)
    chosen = lines[offset:]
    return "".join(chosen if limit is None else chosen[:limit])
