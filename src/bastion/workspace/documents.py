"""A document's text as search indexes it, for every front end that shows a PDF or a Word file
as text: ``read`` with ``format=document`` over HTTP (the page's preview) and ``bastion cat``.
One place decides what that text is, and what a broken document answers."""

from __future__ import annotations

from bastion.core.errors import LimitError, UnsupportedFileError
from bastion.knowledge.ingest import (
    EmptyDocumentError,
    IngestError,
    UnsupportedTypeError,
    parse_document,
)

__all__ = ["document_text", "document_window", "window"]


def document_text(data: bytes, path: str) -> tuple[str, bool]:
    """The text the index reads from ``data`` (the file at ``path``), and whether it was read
    as a document. A file that is not a document after all is shown as it is, decoded as
    UTF-8 (``False``); a document without text is empty.
    A document that cannot be read (malformed, a zip bomb, over the ingest limits) is an
    :class:`UnsupportedFileError` with the ingest's one-line reason, which names the path and
    never quotes the bytes: the raw bytes of a broken PDF are not its text."""
    try:
        return parse_document(data, path).text, True
    except UnsupportedTypeError:
        return data.decode("utf-8", "replace"), False
    except EmptyDocumentError:
        return "", True
    except IngestError as exc:
        raise UnsupportedFileError(str(exc)) from None


def window(text: str, offset: int, limit: int | None) -> str:
    """Lines of ``text`` as ``read`` pages them: skip ``offset`` lines (``< 0``: the last
    ``-offset`` lines), then at most ``limit``."""
    lines = text.splitlines(keepends=True)
    chosen = lines[offset:]
    return "".join(chosen if limit is None else chosen[:limit])


def document_window(text: str, path: str, offset: int, limit: int | None, cap: int) -> str:
    """:func:`window`, refused past ``cap`` bytes (the read limit a file read has): a packed
    document's text can be many times its file's size (a DOCX unpacks up to the ingest
    limit), and a read without ``limit`` would answer all of it at once."""
    content = window(text, offset, limit)
    if len(content) > cap // 4 and len(content.encode("utf-8")) > cap:
        raise LimitError(
            f"{path}: the document's lines asked for are over the {cap}-byte read limit; "
            "ask for fewer lines (limit=...)"
        )
    return content
