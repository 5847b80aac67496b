"""HTML: main content only, headings and tables kept, metadata from <head>."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import html as lxml_html

from bastion.knowledge.ingest import parse_document
from bastion.knowledge.ingest.formats.html import decode_html, prune_boilerplate, simple_markdown

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
ARTICLE = (FIXTURES / "article.html").read_bytes()

BOILERPLATE = [
    "ACME Intranet Home",
    "Signed in as guest",
    "navigation link",
    "cookie",
    "Accept all",
    "sidebar",
    "footer text",
    "All rights reserved",
    "TRACKING-PIXEL",
    "INJECTED-BY-SCRIPT",
    "font-family",
]


@pytest.fixture(scope="module")
def article_text() -> str:
    return parse_document(ARTICLE, "/web/runbook.html").text


def test_article_content_is_kept(article_text: str) -> None:
    assert "the on-call engineer handles a production incident" in article_text
    assert "finally to the engineering manager on duty." in article_text


@pytest.mark.parametrize("junk", BOILERPLATE)
def test_page_chrome_scripts_and_banners_are_dropped(article_text: str, junk: str) -> None:
    assert junk.lower() not in article_text.lower()


def test_headings_and_table_are_markdown(article_text: str) -> None:
    doc = parse_document(ARTICLE, "/web/runbook.html")
    assert [(h.level, h.text) for h in doc.headings] == [
        (1, "Incident Response Runbook"),
        (2, "Severity levels"),
        (2, "Escalation"),
    ]
    lines = article_text.split("\n")
    header = next(i for i, line in enumerate(lines) if line.startswith("| Severity"))
    assert [cell.strip() for cell in lines[header].strip("|").split("|")] == [
        "Severity",
        "Response time",
        "Who is paged",
    ]
    assert set(lines[header + 1]) <= set("|-: ")
    assert "| P0 | 15 minutes | Primary and secondary |" in article_text
    assert "| P2 | 2 hours | Primary |" in article_text


def test_head_metadata() -> None:
    doc = parse_document(ARTICLE, "/web/runbook.html")
    assert doc.mime == "text/html"
    assert doc.title == "Incident Response Runbook"
    assert doc.author == "Platform Team"
    assert doc.date == "2024-02-01T09:30:00+00:00"
    assert doc.keywords == ("incidents", "on-call", "runbook")
    assert doc.metadata["description"] == "How we respond to production incidents."
    assert doc.metadata["language"] == "en"


def test_short_page_uses_the_fallback_and_still_drops_navigation() -> None:
    page = (
        b"<html><head><title>Checklist</title></head><body>"
        b"<nav><a href='/'>Home link</a></nav>"
        b"<ul><li>Rotate keys</li><li>Enable MFA</li></ul>"
        b"<script>track()</script></body></html>"
    )
    doc = parse_document(page, "/web/checklist.html")
    assert doc.text == "- Rotate keys\n- Enable MFA"
    assert doc.title == "Checklist"


def test_simple_markdown_keeps_headings_tables_lists_and_code() -> None:
    tree = lxml_html.document_fromstring(ARTICLE.decode())
    prune_boilerplate(tree)
    text = simple_markdown(tree)
    assert text.startswith("# Incident Response Runbook\n\n")
    assert "## Severity levels" in text
    assert "| Severity | Response time | Who is paged |\n| --- | --- | --- |" in text
    for junk in BOILERPLATE:
        assert junk.lower() not in text.lower()
    snippet = lxml_html.document_fromstring(
        "<html><body><main><h3>Steps</h3><ol><li>One</li><li>Two</li></ol>"
        "<pre>x  =  1\ny = 2</pre><blockquote>Quoted words</blockquote>"
        "<div>Loose <b>inline</b> text<p>Para</p>tail text</div></main></body></html>"
    )
    assert simple_markdown(snippet) == (
        "### Steps\n\n1. One\n1. Two\n\n```\nx  =  1\ny = 2\n```\n\n> Quoted words\n\n"
        "Loose\n\ninline\n\ntext\n\nPara\n\ntail text"
    )


def test_header_inside_an_article_is_kept_for_its_title() -> None:
    page = (
        b"<html><body><header>Site banner words</header><article><header><h1>Kept Title</h1>"
        b"</header><p>Body text that is long enough to be the main content of this small page "
        b"and so be kept by the extractor.</p></article><footer>site foot</footer></body></html>"
    )
    doc = parse_document(page, "/web/a.html")
    assert doc.title == "Kept Title"
    assert "Body text that is long enough" in doc.text
    assert "Site banner words" not in doc.text and "site foot" not in doc.text


def test_decoding_follows_meta_charset_and_falls_back_leniently() -> None:
    latin = '<html><head><meta charset="iso-8859-1"></head><body>Café</body></html>'
    assert "Café" in decode_html(latin.encode("latin-1"))
    assert "Café" in decode_html("<p>Café</p>".encode())
    assert decode_html(b"<p>caf\xe9</p>") == "<p>café</p>"  # not UTF-8: cp1252
    mislabelled = '<meta charset="utf-16"><p>Café</p>'.encode()
    assert "Café" in decode_html(mislabelled)


def test_xhtml_with_an_xml_declaration() -> None:
    page = (
        b'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>X</title></head><body><p>XHTML body text.</p></body></html>"
    )
    doc = parse_document(page, "/web/x.xhtml")
    assert doc.mime == "text/html"
    assert doc.title == "X"
    assert "XHTML body text." in doc.text
