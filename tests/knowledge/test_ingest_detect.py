"""Type detection: signature first, extension second."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from bastion.knowledge.ingest import detect_type
from bastion.knowledge.ingest.detect import (
    DOCX,
    HTML,
    MARKDOWN,
    OCTET_STREAM,
    PDF,
    TEXT,
    ZIP,
    normalize_mime,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def _zip(*names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, "<xml/>")
    return buffer.getvalue()


def _docx() -> bytes:
    buffer = io.BytesIO()
    docx.Document().save(buffer)
    return buffer.getvalue()


def test_pdf_by_signature_whatever_the_name() -> None:
    pdf = (FIXTURES / "report.pdf").read_bytes()
    assert detect_type(pdf, "/x/report.pdf") == PDF
    assert detect_type(pdf, "/x/misnamed.txt") == PDF
    assert detect_type(pdf, None) == PDF


def test_pdf_header_after_junk_needs_a_pdf_ending() -> None:
    pdf = (FIXTURES / "report.pdf").read_bytes()
    assert detect_type(b"\x00\x01junk" + pdf, None) == PDF
    mention = b"# PDF notes\n\nA PDF file starts with %PDF-1.7 and ends with a trailer.\n"
    assert detect_type(mention, "notes.md") == MARKDOWN


def test_docx_is_a_zip_with_word_document_inside() -> None:
    assert detect_type(_docx(), None) == DOCX
    assert detect_type(_docx(), "/a/b.bin") == DOCX
    assert detect_type(_zip("word/document.xml", "[Content_Types].xml"), None) == DOCX


def test_plain_zip_is_not_a_docx_unless_named_so() -> None:
    plain = _zip("a.txt")
    assert detect_type(plain, "/a/archive.zip") == ZIP
    assert detect_type(plain, None) == ZIP
    # Named .docx: reported as a DOCX so the parser can say it is a broken one.
    assert detect_type(plain, "/a/report.docx") == DOCX


@pytest.mark.parametrize(
    "data",
    [
        b"<!DOCTYPE html><html><body>x</body></html>",
        b"\n  <!doctype HTML>\n<html>",
        b"\xef\xbb\xbf<html lang='en'><head></head></html>",
        b'<?xml version="1.0"?>\n<!-- c -->\n<html xmlns="http://www.w3.org/1999/xhtml">',
    ],
)
def test_html_sniffed_from_its_start(data: bytes) -> None:
    assert detect_type(data, None) == HTML
    assert detect_type(data, "page.txt") == HTML


def test_html_mentioned_later_is_not_html() -> None:
    text = b"# Templates\n\nEvery page starts with <html> and a <!doctype html> line.\n"
    assert detect_type(text, "t.md") == MARKDOWN
    assert detect_type(text, "t.txt") == TEXT


def test_html_by_extension_when_it_does_not_start_with_a_tag() -> None:
    assert detect_type(b"<p>fragment</p>", "frag.html") == HTML
    assert detect_type(b"<p>fragment</p>", "frag.htm") == HTML


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", MARKDOWN),
        ("a.MARKDOWN", MARKDOWN),
        ("a.txt", TEXT),
        ("a.csv", TEXT),
        ("README", TEXT),
        (None, TEXT),
    ],
)
def test_utf8_text_takes_its_flavour_from_the_extension(name: str | None, expected: str) -> None:
    assert detect_type("Plain words, café, 東京.\nSecond line.\n".encode(), name) == expected


def test_unnamed_text_that_looks_like_markdown() -> None:
    assert detect_type(b"---\ntitle: x\n---\nbody\n", None) == MARKDOWN
    assert detect_type(b"# Heading\n\nbody\n", None) == MARKDOWN
    assert detect_type(b"#hashtag is not a heading\n", None) == TEXT


def test_text_with_a_bom_is_text() -> None:
    assert detect_type("hello".encode("utf-16"), "a.txt") == TEXT
    assert detect_type(b"\xef\xbb\xbf# Title\n", "a.md") == MARKDOWN


def test_multibyte_character_cut_at_the_sample_edge_is_still_text() -> None:
    data = ("a" * 8191 + "é" * 10).encode()  # the 8192-byte sample ends inside "é"
    assert detect_type(data, "long.txt") == TEXT


def test_binary_falls_back_to_the_extension_then_octet_stream() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    assert detect_type(png, "image.png") == OCTET_STREAM
    assert detect_type(png, None) == OCTET_STREAM
    # Invalid UTF-8 with a text extension is still routed to the text parser (which refuses it).
    assert detect_type(b"caf\xe9 \xff\xfe", "legacy.txt") == TEXT
    assert detect_type(bytes(range(256)) * 4, "random.pdf") == PDF


def test_controls_make_it_binary() -> None:
    assert detect_type(b"\x01\x02\x03\x04abc" * 20, None) == OCTET_STREAM


def test_empty_data_uses_the_extension() -> None:
    assert detect_type(b"", "a.md") == MARKDOWN
    assert detect_type(b"", None) == OCTET_STREAM


def test_normalize_mime() -> None:
    assert normalize_mime("Text/Markdown; charset=UTF-8") == MARKDOWN
    assert normalize_mime("text/x-markdown") == MARKDOWN
    assert normalize_mime("application/xhtml+xml") == HTML
    assert normalize_mime(" application/PDF ") == PDF
