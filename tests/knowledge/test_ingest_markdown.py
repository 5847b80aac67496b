"""Markdown and plain text: front matter, headings, cleaning; the real governed-RAG corpus."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bastion.knowledge.ingest import (
    Heading,
    IngestLimits,
    ParseError,
    parse_document,
    stable_doc_id,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "data" / "governed-rag-demo" / "v1-original"


def test_front_matter_becomes_metadata_and_leaves_the_text() -> None:
    doc = parse_document((FIXTURES / "notes.md").read_bytes(), "/finance/notes.md")
    assert doc.mime == "text/markdown"
    assert doc.path == "/finance/notes.md"
    assert doc.doc_id == stable_doc_id("/finance/notes.md")
    assert doc.title == "Expense Approval Notes"  # front matter wins over the first H1
    assert doc.author == "Dana Finance, Lee Auditor"
    assert doc.date == "2024-01-15"
    assert doc.keywords == ("expenses", "approvals", "finance", "policy")
    assert not doc.text.startswith("---")
    assert "classification" not in doc.text
    assert doc.text.startswith("# Expense Approval\n")


def test_label_keys_pass_through_untouched() -> None:
    doc = parse_document((FIXTURES / "notes.md").read_bytes(), "/finance/notes.md")
    assert doc.metadata["classification"] == "confidential"
    assert doc.metadata["roles"] == ["finance.viewer", "hr.admin"]
    assert doc.metadata["tenant"] == "acme"
    assert doc.metadata["tags"] == "finance, policy"
    assert doc.metadata["date"] == "2024-01-15"  # YAML date -> ISO string (JSON-compatible)


def test_markdown_body_is_cleaned_but_keeps_structure() -> None:
    doc = parse_document((FIXTURES / "notes.md").read_bytes(), "/finance/notes.md")
    assert "Expenses under $500 need the direct manager's approval." in doc.text
    assert "\n\n\n" not in doc.text
    assert "| under $500 | Direct manager |" in doc.text
    assert "approve    amount   <   500     # spacing kept in code\n    then   notify" in doc.text
    assert [(h.level, h.text) for h in doc.headings] == [
        (1, "Expense Approval"),
        (2, "Thresholds"),
        (2, "Code sample"),
        (2, "Setext Heading"),
    ]
    lines = doc.text.split("\n")
    for heading in doc.headings:
        assert heading.text in lines[heading.line - 1]


def test_title_falls_back_to_the_first_h1() -> None:
    doc = parse_document(b"Intro line.\n\n## Minor\n\n# Main Title\n\nBody.\n", "/a.md")
    assert doc.title == "Main Title"
    assert doc.metadata == {}
    assert doc.author is None and doc.date is None and doc.keywords == ()


def test_empty_front_matter_and_crlf() -> None:
    doc = parse_document(b"---\r\n---\r\n# T\r\n\r\nText\r\n", "/a.md")
    assert doc.metadata == {}
    assert doc.text == "# T\n\nText"
    assert doc.headings == (Heading(1, "T", 1),)


def test_unclosed_front_matter_is_a_thematic_break_not_an_error() -> None:
    doc = parse_document(b"---\n\nJust text after a rule.\n", "/a.md")
    assert doc.text == "---\n\nJust text after a rule."
    assert doc.metadata == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"---\ntitle: [unclosed\nsecret: hunter2\n---\nbody\n", r"not valid YAML \(line \d+\)"),
        (b"---\n- a\n- b\n---\nbody\n", "must be a YAML mapping"),
        (b"---\njust a string\n---\nbody\n", "must be a YAML mapping"),
        (b"---\nx: !!python/object:os.system echo\n---\nbody\n", "not valid YAML"),
    ],
)
def test_bad_front_matter_is_a_parse_error_that_quotes_nothing(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        parse_document(data, "/notes/bad.md")
    text = str(caught.value)
    assert "/notes/bad.md" in text
    assert "hunter2" not in text and "unclosed" not in text and "system" not in text
    assert "\n" not in text


def test_front_matter_limits() -> None:
    big = b"---\nnote: " + b"x" * 2000 + b"\n---\nbody\n"
    with pytest.raises(ParseError, match="over 1024 bytes"):
        parse_document(big, "/a.md", limits=IngestLimits(max_front_matter_bytes=1024))
    aliases = b"---\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    aliases += b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
    aliases += b"e: [*d, *d, *d, *d, *d, *d, *d, *d]\n"  # ~40,000 values once expanded
    with pytest.raises(ParseError, match="expands to more than"):
        parse_document(aliases + b"---\nbody\n", "/a.md")


def test_plain_text_has_no_headings_and_no_metadata() -> None:
    data = b"# not a heading in a .txt\r\n\r\n\r\nSome   text with inter-\nnational words.\n"
    doc = parse_document(data, "/notes/a.txt")
    assert doc.mime == "text/plain"
    assert doc.text == "# not a heading in a .txt\n\nSome text with international words."
    assert doc.headings == ()
    assert doc.title is None
    assert doc.metadata == {}


def test_text_in_utf16_with_a_bom() -> None:
    doc = parse_document("Grüße aus Köln\n".encode("utf-16"), "/a.txt")
    assert doc.text == "Grüße aus Köln"


def test_mime_argument_overrides_detection() -> None:
    doc = parse_document(b"# Heading\n\nBody\n", "/data/blob.bin", mime="text/markdown")
    assert doc.mime == "text/markdown"
    assert doc.headings == (Heading(1, "Heading", 1),)
    as_text = parse_document(b"# Heading\n\nBody\n", "/a.md", mime="text/plain; charset=utf-8")
    assert as_text.headings == ()


# --- the real corpus ------------------------------------------------------------------------

EXPECTED_TITLES = {
    "demo-roles.md": "Demo Roles",
    "engineering-handbook.md": "Engineering Team Handbook",
    "finance-policy.md": "Finance Department Policy Manual",
    "hr-confidential.md": "HR Confidential - Executive Compensation",
}


def _corpus() -> list[Path]:
    assert CORPUS.is_dir(), (
        f"governed-RAG corpus missing at {CORPUS}; the shared/ folder must sit beside the "
        "repository (shared/data/governed-rag-demo/v1-original/*.md)"
    )
    files = sorted(CORPUS.glob("*.md"))
    assert files, f"no Markdown files in {CORPUS}"
    return files


def test_governed_rag_corpus_parses() -> None:
    files = _corpus()
    assert {f.name for f in files} >= set(EXPECTED_TITLES)
    for file in files:
        raw = file.read_bytes()
        path = f"/corpus/{file.name}"
        doc = parse_document(raw, path)
        assert doc.mime == "text/markdown", file.name
        assert doc.doc_id == stable_doc_id(path)
        if file.name in EXPECTED_TITLES:
            assert doc.title == EXPECTED_TITLES[file.name]
        lines = doc.text.split("\n")
        assert doc.headings, file.name
        assert doc.headings[0].level == 1
        for heading in doc.headings:
            assert re.match(rf"#{{{heading.level}}} ", lines[heading.line - 1]), heading
            assert lines[heading.line - 1].endswith(heading.text), heading
        # Every ATX heading line of the source is found, in order.
        source_headings = [
            line.lstrip("#").strip()
            for line in raw.decode().splitlines()
            if re.match(r"#{1,6} ", line)
        ]
        assert [h.text for h in doc.headings] == source_headings, file.name
        # Cleaning keeps the words: same words, same order.
        assert doc.text.split() == raw.decode().split(), file.name


def test_governed_rag_corpus_details() -> None:
    by_name = {f.name: f for f in _corpus()}
    handbook = parse_document(
        by_name["engineering-handbook.md"].read_bytes(), "/corpus/engineering-handbook.md"
    )
    assert "- Minimum 2 approvals for production code" in handbook.text
    on_call = next(h for h in handbook.headings if h.text == "On-Call Rotation")
    assert on_call.level == 2
    assert handbook.text.split("\n")[on_call.line - 1] == "## On-Call Rotation"
    roles = parse_document(by_name["demo-roles.md"].read_bytes(), "/corpus/demo-roles.md")
    # Nested list indentation survives (Markdown structure depends on it).
    assert '    - Answer: "All code must be peer-reviewed' in roles.text
    assert any(h.text == '1. Public User (role: "public")' and h.level == 3 for h in roles.headings)
