"""Batches: every document parsed or skipped with its reason; the batch goes on."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path

import docx
import pytest

from bastion.knowledge import ingest
from bastion.knowledge.ingest import (
    BatchResult,
    IngestLimits,
    ParsedDocument,
    SkippedDocument,
    ingest_many,
    parse_document,
    stable_doc_id,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Batch Doc", level=1)
    document.add_paragraph("Generated for the batch test.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _items() -> Iterator[tuple[str, bytes]]:
    yield "/kb/notes.md", (FIXTURES / "notes.md").read_bytes()
    yield "/kb/broken.pdf", (FIXTURES / "report.pdf").read_bytes()[:700]
    yield "/kb/article.html", (FIXTURES / "article.html").read_bytes()
    yield "/kb/empty.txt", b""
    yield "/kb/report.pdf", (FIXTURES / "report.pdf").read_bytes()
    yield "/kb/image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x00"
    yield "/kb/doc.docx", _docx()
    yield "/../escape.md", b"# nope"
    yield "/kb/legacy.txt", b"caf\xe9"


def test_batch_parses_the_good_and_skips_the_bad_with_reasons() -> None:
    result = ingest_many(_items())  # a generator: consumed once, in order
    assert isinstance(result, BatchResult)
    assert [d.path for d in result.documents] == [
        "/kb/notes.md",
        "/kb/article.html",
        "/kb/report.pdf",
        "/kb/doc.docx",
    ]
    assert [(s.path, s.error) for s in result.skipped] == [
        ("/kb/broken.pdf", "ParseError"),
        ("/kb/empty.txt", "EmptyDocumentError"),
        ("/kb/image.png", "UnsupportedTypeError"),
        ("/../escape.md", "InvalidPathError"),
        ("/kb/legacy.txt", "ParseError"),
    ]
    assert result.parsed == 4
    assert result.summary() == "4 parsed, 5 skipped"
    assert result.reasons["/kb/legacy.txt"].startswith("/kb/legacy.txt is not valid UTF-8")
    assert all(reason and "\n" not in reason for reason in result.reasons.values())


def test_batch_documents_are_the_same_as_single_parses() -> None:
    data = (FIXTURES / "notes.md").read_bytes()
    result = ingest_many([("/kb/notes.md", data)])
    assert result.documents == (parse_document(data, "/kb/notes.md"),)
    assert result.skipped == ()
    assert result.summary() == "1 parsed, 0 skipped"


def test_batch_limits_apply_to_every_document() -> None:
    result = ingest_many(
        [("/a.txt", b"x" * 10), ("/b.txt", b"y" * 100)], limits=IngestLimits(max_bytes=50)
    )
    assert [d.path for d in result.documents] == ["/a.txt"]
    assert result.skipped == (
        SkippedDocument(
            "/b.txt",
            "/b.txt is 100 bytes, over the 50 bytes ingest limit; split the file or raise "
            "IngestLimits.max_bytes",
            "DocumentTooLargeError",
        ),
    )


def test_empty_batch() -> None:
    result = ingest_many([])
    assert result.parsed == 0 and result.skipped == ()


def test_parsed_document_is_frozen_and_reingestion_is_stable() -> None:
    data = (FIXTURES / "notes.md").read_bytes()
    first = parse_document(data, "kb/notes.md")
    second = parse_document(data, "/kb/./notes.md")
    assert first == second
    assert first.path == "/kb/notes.md"
    assert first.doc_id == stable_doc_id("/kb/notes.md")
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.text = "changed"  # type: ignore[misc]
    assert isinstance(first, ParsedDocument)


def test_public_surface() -> None:
    assert set(ingest.__all__) == {
        "DEFAULT_LIMITS",
        "SUPPORTED",
        "BatchResult",
        "DocumentTooLargeError",
        "EmptyDocumentError",
        "Heading",
        "IngestError",
        "IngestLimits",
        "ParseError",
        "ParsedDocument",
        "SkippedDocument",
        "UnsupportedTypeError",
        "clean_text",
        "detect_type",
        "ingest_many",
        "parse_document",
        "stable_doc_id",
    }
    for name in ingest.__all__:
        assert getattr(ingest, name) is not None
    supported = set(ingest.SUPPORTED)
    assert supported == {
        "text/markdown",
        "text/plain",
        "text/html",
        "application/pdf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    }
