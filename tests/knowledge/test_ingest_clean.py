"""Cleaning and the metadata helpers: pure functions, checked as tables."""

from __future__ import annotations

import re
from datetime import date, datetime

import pytest

from bastion.core.errors import InvalidPathError
from bastion.knowledge.ingest import Heading, clean_text, stable_doc_id
from bastion.knowledge.ingest.metadata import (
    iso_date,
    markdown_headings,
    person,
    split_keywords,
)
from bastion.labels.frontmatter import FrontMatterError, load_mapping


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a   b\t c  ", "a b\t c"),
        ("line one  \r\nline two\rline three", "line one\nline two\nline three"),
        ("one\n\n\n\n\ntwo\n \n\t\nthree", "one\n\ntwo\n\nthree"),
        ("\n\n  \nbody\n\n\n", "body"),
        ("bell\x07 nul\x00 esc\x1b[0m tab\tnew\nline", "bell nul esc[0m tab\tnew\nline"),
        ("zero\u200bwidth \ufeffbom soft\u00adhyphen", "zerowidth bom softhyphen"),
        ("no\u00a0break\u2003em space", "no break em space"),
        ("page one\fpage two", "page one\npage two"),
    ],
)
def test_whitespace_and_control_characters(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


def test_nfc_normalization() -> None:
    decomposed = "Cafe\u0301 Zu\u0308rich"
    assert clean_text(decomposed) == "Café Zürich"
    assert clean_text(decomposed) == clean_text("Café Zürich")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("the inter-\nnational office", "the international office"),
        ("inter-   \n   national", "international"),
        ("a state-of-the-\nart system", "a state-of-the-art system"),
        ("state-of-the-art\ndesign", "state-of-the-art\ndesign"),
        ("keep the hyphen-\nBefore a capital", "keep the hyphen-\nBefore a capital"),
        ("dash at end -\nnext", "dash at end -\nnext"),
        ("1990-\n2000", "1990-\n2000"),
        ("soft\u00ad\nhyphen", "softhyphen"),
        ("multi-\nline-\nbreak", "multilinebreak"),
    ],
)
def test_words_hyphenated_across_lines_are_joined(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


def test_indentation_kept_for_markdown_dropped_for_layout_text() -> None:
    text = "- item\n    - nested   item\n"
    assert clean_text(text) == "- item\n    - nested item"
    assert clean_text(text, keep_indent=False) == "- item\n- nested item"


def test_code_fences_keep_their_spacing_and_hyphens() -> None:
    text = "Text   here\n```python\nx  =  1   \nflag = '-\nnot-joined'\n```\nafter   fence"
    assert clean_text(text) == (
        "Text here\n```python\nx  =  1\nflag = '-\nnot-joined'\n```\nafter fence"
    )


def test_stable_doc_id_is_a_hash_of_the_normalized_path() -> None:
    doc_id = stable_doc_id("/docs/handbook.md")
    assert re.fullmatch(r"[0-9a-f]{32}", doc_id)
    assert stable_doc_id("docs/handbook.md") == doc_id
    assert stable_doc_id("/docs/./x/../handbook.md") == doc_id
    assert stable_doc_id("/docs/handbook.md") == doc_id  # stable across calls
    assert stable_doc_id("/docs/handbook2.md") != doc_id
    with pytest.raises(InvalidPathError):
        stable_doc_id("/../etc/passwd")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (date(2024, 3, 5), "2024-03-05"),
        (datetime(2024, 3, 5, 10, 30), "2024-03-05T10:30:00"),
        ("2024-03-05", "2024-03-05"),
        ("2024-03-05T10:00:00Z", "2024-03-05T10:00:00+00:00"),
        ("2024/03/05", "2024-03-05"),
        ("March 5, 2024", "2024-03-05"),
        ("5 March 2024", "2024-03-05"),
        ("Tue, 05 Mar 2024 10:00:00 +0000", "2024-03-05T10:00:00+00:00"),
        ("D:20240305120000+01'00'", "2024-03-05T12:00:00+01:00"),
        ("D:20240305", "2024-03-05"),
        ("D:2024", "2024"),
        ("D:20241399", None),
        ("next Tuesday", None),
        ("", None),
        (None, None),
    ],
)
def test_iso_date(value: object, expected: str | None) -> None:
    assert iso_date(value) == expected


def test_split_keywords() -> None:
    assert split_keywords("a, b; c", ["c", "D", " d "], None, 7) == ("a", "b", "c", "D", "7")
    assert split_keywords("", [], None) == ()


def test_person() -> None:
    assert person("  Jane   Doe ") == "Jane Doe"
    assert person(["Ann", {"name": "Bo"}, None]) == "Ann, Bo"
    assert person({"email": "x@example.com"}) is None
    assert person(None) is None


def test_front_matter_converts_dates_and_keys_and_bounds_aliases() -> None:
    block = "when: 2024-01-02\n3: [x, 2024-01-02 03:04:00]\nn: null\n"
    assert load_mapping(block, "/a.md") == {
        "when": "2024-01-02",
        "3": ["x", "2024-01-02T03:04:00"],
        "n": None,
    }
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(FrontMatterError, match="more than 50 values"):
        load_mapping(laughs + "c: [*b, *b, *b, *b]\n", "/a.md", max_nodes=50)


def test_markdown_headings_with_line_numbers() -> None:
    text = "\n".join(
        [
            "# Title",  # 1
            "",
            "Intro #not a heading",
            "#hashtag",
            "## Section ##",  # 5
            "```",
            "# comment in code",
            "```",
            "Setext Title",
            "============",  # 10
            "",
            "Sub",
            "---",
            "- list item",
            "---",  # 15: a thematic break after a list, not a heading
            "    # indented code",
            "###### Six",
            "####### Seven is text",
        ]
    )
    assert markdown_headings(text) == (
        Heading(1, "Title", 1),
        Heading(2, "Section", 5),
        Heading(1, "Setext Title", 9),
        Heading(2, "Sub", 12),
        Heading(6, "Six", 17),
    )
