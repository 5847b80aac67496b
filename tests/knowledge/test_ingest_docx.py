"""DOCX: headings, lists and tables as Markdown; core properties as metadata; zip checks."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from datetime import datetime

import docx
import pytest

from bastion.knowledge.ingest import IngestLimits, ParseError, parse_document
from bastion.knowledge.ingest.formats.docx import check_zip


def _build_docx() -> bytes:
    document = docx.Document()
    props = document.core_properties
    props.title = "Vendor Terms"
    props.author = "Finance Ops"
    props.keywords = "vendors; payments, terms"
    props.subject = "Payment terms"
    props.created = datetime(2024, 4, 2, 8, 0, 0)
    document.add_heading("Vendor Payment Terms", level=1)
    document.add_paragraph("All vendors are paid   net 30 days.")
    document.add_heading("Discounts", level=2)
    document.add_paragraph("Early payment", style="List Bullet")
    document.add_paragraph("Volume rebate", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for r, row in enumerate([("Term", "Discount"), ("2/10 net 30", "2%"), ("Net 45 | pref", "")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Deep heading", level=7)
    document.add_paragraph("Closing paragraph.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "RUNNING HEADER TEXT"
    section.footer.paragraphs[0].text = "RUNNING FOOTER TEXT"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


DOCX = _build_docx()


def test_body_becomes_markdown_in_order() -> None:
    doc = parse_document(DOCX, "/finance/terms.docx")
    assert doc.mime == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert doc.text == (
        "# Vendor Payment Terms\n\n"
        "All vendors are paid net 30 days.\n\n"
        "## Discounts\n\n"
        "- Early payment\n\n"
        "1. Volume rebate\n\n"
        "| Term | Discount |\n"
        "| --- | --- |\n"
        "| 2/10 net 30 | 2% |\n"
        "| Net 45 \\| pref | |\n\n"
        "###### Deep heading\n\n"
        "Closing paragraph."
    )


def test_headings_with_line_numbers() -> None:
    doc = parse_document(DOCX, "/finance/terms.docx")
    assert [(h.level, h.text) for h in doc.headings] == [
        (1, "Vendor Payment Terms"),
        (2, "Discounts"),
        (6, "Deep heading"),
    ]
    lines = doc.text.split("\n")
    assert all(lines[h.line - 1].endswith(h.text) for h in doc.headings)


def test_page_headers_and_footers_are_not_read() -> None:
    doc = parse_document(DOCX, "/finance/terms.docx")
    assert "RUNNING" not in doc.text


def test_core_properties_become_metadata() -> None:
    doc = parse_document(DOCX, "/finance/terms.docx")
    assert doc.title == "Vendor Terms"
    assert doc.author == "Finance Ops"
    assert doc.date == "2024-04-02T08:00:00+00:00"
    assert doc.keywords == ("vendors", "payments", "terms")
    assert doc.metadata["subject"] == "Payment terms"
    assert doc.metadata["created"] == "2024-04-02T08:00:00+00:00"


def test_title_falls_back_to_the_first_heading_without_core_properties() -> None:
    source = zipfile.ZipFile(io.BytesIO(DOCX))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "_rels/.rels":  # drop the relationship to the core part
                data = re.sub(rb"<Relationship [^>]*docProps/core\.xml\"/>", b"", data)
            if item.filename != "docProps/core.xml":
                target.writestr(item, data)
    doc = parse_document(buffer.getvalue(), "/finance/terms.docx")
    assert doc.title == "Vendor Payment Terms"
    assert doc.metadata == {}
    assert doc.date is None


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_that_is_not_a_docx() -> None:
    with pytest.raises(ParseError, match=r"is a zip but not a DOCX \(no word/document.xml\)"):
        parse_document(_zip({"notes.txt": b"hello"}), "/finance/fake.docx")


def test_garbage_after_a_zip_signature() -> None:
    with pytest.raises(ParseError, match="is not a valid DOCX"):
        parse_document(b"PK\x03\x04" + bytes(range(256)) * 2, "/finance/broken.docx")


def test_broken_document_xml_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"/finance/bad\.docx is not a readable DOCX"):
        parse_document(
            _zip({"word/document.xml": b"<not xml", "[Content_Types].xml": b"<x/>"}),
            "/finance/bad.docx",
        )


def test_zip_bomb_is_refused_before_it_is_unpacked() -> None:
    bomb = _zip({"word/document.xml": b"\0" * (8 * 1024 * 1024)})
    assert len(bomb) < 64 * 1024
    limits = IngestLimits(max_unpacked_bytes=1024 * 1024)
    with pytest.raises(ParseError, match="unpacks to over 1 MiB"):
        parse_document(bomb, "/finance/bomb.docx", limits=limits)


def _lie_about_sizes(data: bytes, name: bytes, size: int) -> bytes:
    """Rewrite the declared uncompressed size of ``name`` in both zip headers."""
    out = bytearray(data)
    local = out.index(b"PK\x03\x04" + out[4:8])  # first local header
    assert out[local + 30 : local + 30 + len(name)] == name
    struct.pack_into("<I", out, local + 22, size)
    central = out.index(b"PK\x01\x02")
    struct.pack_into("<I", out, central + 24, size)
    return bytes(out)


def test_zip_that_lies_about_its_size_is_caught_while_unpacking() -> None:
    honest = _zip({"word/document.xml": b"\0" * (4 * 1024 * 1024)})
    liar = _lie_about_sizes(honest, b"word/document.xml", 100)
    assert zipfile.ZipFile(io.BytesIO(liar)).infolist()[0].file_size == 100
    with pytest.raises(ParseError, match="broken zip"):
        check_zip(liar, "/x.docx", IngestLimits())


def test_too_many_members_and_odd_compression() -> None:
    many = _zip({f"word/part{i}.xml": b"x" for i in range(20)} | {"word/document.xml": b"x"})
    with pytest.raises(ParseError, match="over 10 parts"):
        check_zip(many, "/x.docx", IngestLimits(max_zip_entries=10))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("word/document.xml", b"x")
    with pytest.raises(ParseError, match="unsupported zip compression"):
        check_zip(buffer.getvalue(), "/x.docx", IngestLimits())


def test_check_zip_measures_real_bytes() -> None:
    data = zlib.compress(b"")  # any small payload
    names = check_zip(_zip({"word/document.xml": data}), "/x.docx", IngestLimits())
    assert names == ["word/document.xml"]
