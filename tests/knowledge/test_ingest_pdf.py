"""PDF: text per page, running headers/footers removed, properties as metadata.

``fixtures/ingest/report.pdf`` is written by ``fixtures/ingest/make_fixtures.py`` (no PDF
library): three pages, each with the header "ACME Corp — Confidential" and the footer
"Page N of 3".
"""

from __future__ import annotations

import io
from pathlib import Path

import pypdf
import pytest

from bastion.knowledge.ingest import (
    DocumentTooLargeError,
    EmptyDocumentError,
    IngestLimits,
    ParseError,
    parse_document,
)
from bastion.knowledge.ingest.formats.pdf import strip_running_lines

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
REPORT = (FIXTURES / "report.pdf").read_bytes()


def test_fixture_is_a_real_pdf_with_the_running_lines() -> None:
    reader = pypdf.PdfReader(io.BytesIO(REPORT), strict=True)
    assert len(reader.pages) == 3
    first = reader.pages[0].extract_text()
    assert "ACME Corp — Confidential" in first
    assert "Page 1 of 3" in first


def test_text_of_every_page_without_headers_and_footers() -> None:
    doc = parse_document(REPORT, "/reports/q1.pdf")
    assert doc.mime == "application/pdf"
    assert "ACME Corp" not in doc.text
    assert "Confidential" not in doc.text
    assert "Page " not in doc.text
    for words in ("Quarterly Security Review", "Findings", "within four hours", "MFA"):
        assert words in doc.text
    assert doc.text.index("Findings") < doc.text.index("Recommendations")
    assert "\n\nFindings\n" in doc.text  # pages are separated by a blank line


def test_hyphenation_is_repaired_and_compounds_kept() -> None:
    doc = parse_document(REPORT, "/reports/q1.pdf")
    assert "covers the international offices" in doc.text
    assert "state-of-the-art" in doc.text
    assert "inter-" not in doc.text


def test_properties_become_metadata() -> None:
    doc = parse_document(REPORT, "/reports/q1.pdf")
    assert doc.title == "Quarterly Security Review"
    assert doc.author == "Jane Analyst"
    assert doc.date == "2024-03-05T12:00:00+00:00"
    assert doc.keywords == ("security", "review", "incidents")
    assert doc.metadata["pages"] == 3
    assert doc.metadata["created"] == "2024-03-05T12:00:00+00:00"
    assert doc.headings == ()  # pypdf gives no structure


def test_strip_running_lines_with_page_numbers() -> None:
    pages = [
        f"ACME Corp — Confidential\nSection {name}\nBody text about {name}.\n- {n} -"
        for n, name in enumerate(["alpha", "beta", "gamma", "delta", "epsilon"], start=3)
    ]
    assert strip_running_lines(pages) == [
        f"Section {name}\nBody text about {name}."
        for name in ["alpha", "beta", "gamma", "delta", "epsilon"]
    ]


def test_numbered_lines_that_do_not_follow_the_pages_are_kept() -> None:
    steps = [(7, "one"), (2, "two"), (9, "three")]
    pages = [
        f"Step {step}: check the logs\nbody {word}\nPage {n} of 3"
        for n, (step, word) in enumerate(steps, start=1)
    ]
    assert strip_running_lines(pages) == [
        f"Step {step}: check the logs\nbody {word}" for step, word in steps
    ]


def test_strip_running_lines_keeps_lines_on_a_minority_of_pages() -> None:
    pages = ["Intro\nalpha", "Intro\nbeta", "Other\ngamma", "Other2\ndelta", "Other3\neps"]
    assert strip_running_lines(pages) == pages
    assert strip_running_lines(["Only page\ntext"]) == ["Only page\ntext"]


def test_strip_running_lines_only_looks_at_page_edges() -> None:
    pages = [
        "\n".join([f"top {w}", f"second {w}", f"third {w}", "The same sentence in the middle.",
                   f"fifth {w}", f"sixth {w}", f"last {w}"])
        for w in ("one", "two", "three")
    ]  # fmt: skip
    assert strip_running_lines(pages) == pages


def test_truncated_pdf_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"^/reports/cut\.pdf is not a readable PDF"):
        parse_document(REPORT[: len(REPORT) // 2], "/reports/cut.pdf")


def test_random_bytes_named_pdf_is_a_parse_error() -> None:
    noise = bytes((i * 7919 + 13) % 256 for i in range(4096))
    with pytest.raises(ParseError) as caught:
        parse_document(noise, "/reports/noise.pdf")
    assert "\n" not in str(caught.value)


def test_pdf_without_text_is_empty() -> None:
    blank = REPORT.replace(b"Tj", b"  ")  # keep lengths: show no text at all
    with pytest.raises(EmptyDocumentError, match="OCR"):
        parse_document(blank, "/scans/blank.pdf")


def test_an_unreadable_page_is_skipped_and_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pypdf.PageObject.extract_text

    def flaky(page: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        text = real(page)
        if "Findings" in text:
            raise KeyError("/Font")  # what a damaged resource dictionary raises inside pypdf
        return text

    monkeypatch.setattr(pypdf.PageObject, "extract_text", flaky)
    doc = parse_document(REPORT, "/reports/q1.pdf")
    assert doc.metadata["unreadable_pages"] == [2]
    assert "Findings" not in doc.text
    assert "Quarterly Security Review" in doc.text and "Recommendations" in doc.text


def test_page_limit() -> None:
    with pytest.raises(DocumentTooLargeError, match="3 pages, over the 2-page limit"):
        parse_document(REPORT, "/reports/q1.pdf", limits=IngestLimits(max_pdf_pages=2))


def test_encrypted_pdf_is_refused() -> None:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(REPORT)))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ParseError, match="encrypted PDF"):
        parse_document(buffer.getvalue(), "/reports/locked.pdf")
