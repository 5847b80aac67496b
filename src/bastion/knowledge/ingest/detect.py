"""What kind of document is this? File signature first, the name's extension second.

Hand-written checks, not a magic-number library: the supported types need three things a
signature table does not give (a ZIP is only a DOCX if ``word/document.xml`` is inside; HTML and
Markdown are text with no magic number; text needs a UTF-8 check). See ``docs/ingestion.md``.
"""

from __future__ import annotations

import io
import re
import zipfile
from posixpath import splitext

__all__ = [
    "DOCX",
    "HTML",
    "MARKDOWN",
    "OCTET_STREAM",
    "PDF",
    "SUPPORTED",
    "TEXT",
    "ZIP",
    "detect_type",
    "normalize_mime",
]

MARKDOWN = "text/markdown"
TEXT = "text/plain"
HTML = "text/html"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ZIP = "application/zip"
OCTET_STREAM = "application/octet-stream"

SUPPORTED = frozenset({MARKDOWN, TEXT, HTML, PDF, DOCX})

_BY_EXTENSION = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": TEXT,
    ".text": TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".pdf": PDF,
    ".docx": DOCX,
}
_TEXT_TYPES = frozenset({MARKDOWN, TEXT, HTML})

_ALIASES = {
    "text/x-markdown": MARKDOWN,
    "text/md": MARKDOWN,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
}

_SNIFF_BYTES = 1024
_TEXT_SAMPLE = 8192
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
"""Control characters (category Cc) other than newline, carriage return, tab and form feed."""
_NOT_CONTROL = bytes(b for b in range(256) if not _CONTROLS.match(chr(b)))
"""Every byte but the ASCII (and Latin-1) ones :data:`_CONTROLS` counts."""
# Possessive: a comment ends at its first "-->", and the parse never backtracks into one (with
# a plain "*", k comments before something that is not <html> took 2^k steps).
_HTML_START = re.compile(
    rb"\s*+(?:<\?xml[^>]*+>\s*+)?(?:<!--.*?-->\s*+)*+<(?:!doctype\s+html|html)[\s>]", re.I | re.S
)
_MARKDOWN_START = re.compile(r"\A(?:---\r?\n|\s*#{1,6}[ \t]+\S)")


def normalize_mime(mime: str) -> str:
    """``Text/Markdown; charset=utf-8`` -> ``text/markdown``; known aliases to one name."""
    base = mime.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def detect_type(data: bytes, name: str | None = None) -> str:
    """The MIME type of ``data``, by signature first and by ``name``'s extension second.

    A ZIP is a DOCX when it holds ``word/document.xml`` (or is named ``.docx``, so that a broken
    one is reported as a broken DOCX); text that is valid UTF-8 takes its flavour from the
    extension. Anything else is ``application/octet-stream``.
    """
    ext = splitext(name)[1].lower() if name else ""
    by_ext = _BY_EXTENSION.get(ext)
    if not data:
        return by_ext or OCTET_STREAM
    if _is_pdf(data):
        return PDF
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return DOCX if by_ext == DOCX or _zip_has_word_document(data) else ZIP
    if _HTML_START.match(data[:_SNIFF_BYTES].removeprefix(b"\xef\xbb\xbf")):
        return HTML
    if _looks_like_text(data):
        if by_ext in _TEXT_TYPES:
            return by_ext
        if by_ext is None and _MARKDOWN_START.match(data[:_SNIFF_BYTES].decode("utf-8", "replace")):
            return MARKDOWN
        return TEXT
    return by_ext or OCTET_STREAM


def _is_pdf(data: bytes) -> bool:
    """``%PDF-`` at the start; or within the first KB (junk before it is allowed) when the
    file also ends like a PDF, so a text that merely mentions ``%PDF-`` stays text."""
    at = data.find(b"%PDF-", 0, _SNIFF_BYTES)
    if at < 0:
        return False
    return not data[:at].strip(b" \t\r\n\xef\xbb\xbf") or b"%%EOF" in data[-2048:]


def _zip_has_word_document(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False


def _looks_like_text(data: bytes) -> bool:
    """UTF-8 (or a BOM-marked UTF-16/32) with almost no control characters."""
    if data.startswith(_BOMS):
        return True
    sample = data[:_TEXT_SAMPLE]
    if b"\x00" in sample:
        return False
    if sample.isascii():  # the controls counted on the bytes (ASCII decodes to the same)
        return len(sample.translate(None, _NOT_CONTROL)) <= len(sample) // 100
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The sample may end inside a multi-byte character; anything earlier is not UTF-8.
        if len(data) <= _TEXT_SAMPLE or exc.start < len(sample) - 3:
            return False
        text = sample[: exc.start].decode("utf-8")
    controls = len(_CONTROLS.findall(text))
    return controls <= len(text) // 100
