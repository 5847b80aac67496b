"""Hostile documents: every extraction pass is linear, bounded, and off the event loop.

Each input class below once took quadratic time somewhere (``"[a](" + "\\t" * 16_000 + "x"``
took 2.7 s in the link pattern). The inputs are 100k to 1M characters; each call runs under a
hard 10 s guard, and the assertions are on results, never on durations.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from bastion.knowledge import relations
from bastion.knowledge.chunking import Chunker, ChunkingConfig
from bastion.knowledge.chunking.structure import analyze
from bastion.knowledge.chunking.tokens import WhitespaceTokenCounter
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.ingest import parse_document
from bastion.knowledge.ingest.clean import clean_text
from bastion.knowledge.ingest.detect import detect_type
from bastion.knowledge.ingest.metadata import markdown_headings
from bastion.knowledge.relations import extract_relations

HARD_TIMEOUT = 10.0
T = TypeVar("T")
DOC = "/docs/a.md"
N = 1_000_000


def finishes(call: Callable[[], T]) -> T:
    """``call()`` on a daemon thread; fail (instead of hanging) if it takes over 10 s."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed back to the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HARD_TIMEOUT)
    assert not thread.is_alive(), f"did not finish within {HARD_TIMEOUT}s"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def links(text: str) -> list[str]:
    return [r.target for r in finishes(lambda: extract_relations(DOC, text, {}))]


HOSTILE = {
    # a long whitespace run inside a destination: "\(\s*" before an optional title
    "tabs-in-destination": "[a](" + "\t" * N + "x",
    "spaces-in-destination": "[a](" + " " * N + "x",
    "newline-runs": "[a](\n" + " \n" * (N // 2),
    # every "[" escaped: each used to rescan the rest of the block
    "escaped-brackets": "[\\" * (N // 2),
    "backslash-run": "\\" * N,
    "open-brackets": "[" * N,
    "nested-labels": "[a" + "[b]" * (N // 3),
    "link-starts": "[a](" * (N // 4),
    "image-starts": "![a](" * (N // 5),
    "open-titles": '[a](b "' * (N // 7),
    "open-parens": "[a](" + "(" * N,
    "open-angles": "[a](<" * (N // 5),
    "backtick-runs": "`a``" * (N // 4),
    "fence-lines": "```\n" * (N // 4),
    "blank-blocks": "\n \n" * (N // 3),
    "definition-lines": "[a]: b\n" * (N // 7),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_documents_finish_and_yield_only_real_links(name: str) -> None:
    found = links(HOSTILE[name])
    assert found == (["/docs/b"] if name == "definition-lines" else [])


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_link_after_a_hostile_run_is_still_found(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scanner does not give up on a hostile run: the link after it is found (200k
    characters of each class; the budget is lifted, a loaded machine being slow)."""
    monkeypatch.setattr(relations, "EXTRACTION_BUDGET_S", 60.0)
    text = HOSTILE[name][:200_000]
    assert name != "fence-lines" or text.count("```") % 2 == 0  # every fence closed
    found = links(text + "\n\n[last](last.md)\n")
    assert found[-1] == "/docs/last.md"


def test_escapes_still_decide_links_and_images() -> None:
    text = "\\[no](a.md) \\\\[yes](b.md) \\![link](c.md) \\\\![image](d.md) ![image](e.md)"
    assert links(text) == ["/docs/b.md", "/docs/c.md"]


def test_whitespace_before_the_title_is_still_allowed() -> None:
    text = "[a](  b.md  \"title\"  ) [c](\n\tc.md\n't'\n)"
    assert links(text) == ["/docs/b.md", "/docs/c.md"]


def test_relations_per_document_are_capped(caplog: pytest.LogCaptureFixture) -> None:
    text = " ".join(f"[x](n{i}.md)" for i in range(relations.MAX_RELATIONS + 500))
    with caplog.at_level(logging.WARNING, logger="bastion.knowledge.relations"):
        found = finishes(lambda: extract_relations(DOC, text, {"parent": "p.md"}))
    assert len(found) == relations.MAX_RELATIONS
    assert found[0].target == "/docs/p.md"  # front matter first
    assert found[-1].target == f"/docs/n{relations.MAX_RELATIONS - 2}.md"
    [record] = caplog.records
    assert DOC in record.getMessage() and "relations kept" in record.getMessage()


def test_extraction_stops_at_its_time_budget(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relations, "EXTRACTION_BUDGET_S", 0.0)
    with caplog.at_level(logging.WARNING, logger="bastion.knowledge.relations"):
        found = finishes(lambda: extract_relations(DOC, "[b](b.md)", {"related": ["r.md"]}))
    assert [r.target for r in found] == ["/docs/r.md"]  # front matter kept, links not reached
    [record] = caplog.records
    assert "time budget" in record.getMessage() and "split the document" in record.getMessage()
    assert "b.md" not in record.getMessage()  # the log names the document, never its content


# == off the event loop ======================================================================


def running_elsewhere(function: str) -> bool:
    """Whether a thread other than this one is inside ``function`` right now."""
    here = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        walk = frame if ident != here else None
        while walk is not None:
            if walk.f_code.co_name == function:
                return True
            walk = walk.f_back
    return False


HEAVY = {
    # ~0.5 s of parsing (cleaning joins every hyphenated line), little else
    "parse_document": "lorem ipsum-\ndolor sit\n" * 50_000 + "\n\n[b](b.md)\n",
    # ~0.2 s of link extraction, little parsing
    "extract_relations": ("[a](" + " " * 50 + "x ") * 2_000 + "![a](" * 100_000 + "\n\n[b](b.md)\n",
}


@pytest.mark.parametrize("function", sorted(HEAVY))
async def test_indexing_a_hostile_document_leaves_the_loop_free(
    function: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a worker thread parses the document or extracts its links, this coroutine keeps
    running: it could not observe that work from the loop's own thread otherwise."""
    monkeypatch.setattr(relations, "EXTRACTION_BUDGET_S", 60.0)  # a loaded machine is slow
    knowledge = Knowledge(chunker=Chunker(ChunkingConfig(), WhitespaceTokenCounter()))
    task = asyncio.create_task(knowledge.index_file(DOC, HEAVY[function].encode()))
    observed = False
    while not task.done():
        observed = observed or running_elsewhere(function)
        await asyncio.sleep(0)
    assert await asyncio.wait_for(task, timeout=HARD_TIMEOUT) > 0
    assert observed
    assert [r.target for r in knowledge.relations.relations(DOC)] == ["/docs/b.md"]


# == other passes over document text =========================================================


@pytest.mark.parametrize("marks", ["!", "?", ".", "\u2026", "\u3002", '."', "!)"])
def test_sentence_boundaries_in_runs_of_end_marks_are_linear(marks: str) -> None:
    """A run of n end marks used to be rescanned from each of its n positions."""
    text = marks * (N // len(marks))
    layout = finishes(lambda: analyze(text))
    assert layout.positions[0] == 0 and layout.positions[-1] == len(text)


def test_sentence_boundaries_are_unchanged() -> None:
    text = "One. Two!! Three?\u201d Four\u2026 e.g. five. \u3002\u3002Six \u3002seven\n"
    assert analyze(text).positions == [0, 5, 11, 19, 36, 38, 43, len(text)]


def test_many_comments_before_a_non_html_start_are_linear() -> None:
    """Comments before ``<html>`` are skipped one by one: k of them followed by something
    else used to take 2^k steps (25 took seconds)."""
    assert finishes(lambda: detect_type(b"<!--a-->" * 128 + b"x", "/a.txt")) == "text/plain"
    page = b"<!-- a --> <!--b-->\n" * 40 + b"<!DOCTYPE html><html><body>hi</body></html>"
    assert finishes(lambda: detect_type(page, "/a")) == "text/html"


@pytest.mark.parametrize(
    "line",
    ["# a" + " " * N + "x", "# a" + " \t" * (N // 2) + "#", "# a" + " #" * (N // 2) + "x"],
    ids=["spaces", "blanks-then-closing", "closing-runs"],
)
def test_a_heading_with_a_long_run_of_blanks_is_linear(line: str) -> None:
    """The heading pattern retried its closing sequence at each blank: "# a" + 20,000 spaces
    + "x" took 9 s. The chunker and the Markdown heading reader share the shape."""
    text = line + "\n\nbody\n"
    assert finishes(lambda: analyze(text)).section_starts == [0]
    [heading] = finishes(lambda: markdown_headings(text))
    assert heading.level == 1 and heading.text.startswith("a") and heading.line == 1


def test_headings_are_still_read_as_before() -> None:
    text = "# Title #  \n\n## Sub ##\n\ntext\n\n#   \n\n#no\n\n### #\n"
    assert [(h.level, h.text) for h in markdown_headings(text)] == [(1, "Title"), (2, "Sub")]
    assert analyze(text).section_paths == [("Title",), ("Title", "Sub")]


def test_a_long_run_of_hyphenated_line_breaks_is_joined_in_linear_time() -> None:
    """Each join rebuilt and re-split the growing line: 320k characters took 4.6 s."""
    text = '\t"' + "a-\n" * (N // 3)
    cleaned = finishes(lambda: clean_text(text))
    assert cleaned == '\t"' + "a" * (N // 3 - 1) + "a-"  # one line, every break joined
    assert clean_text("state-of-the-\nart and inter-\nnational\nsmall-\nCaps") == (
        "state-of-the-art and international\nsmall-\nCaps"
    )


@pytest.mark.parametrize(
    "run", ["\\", "\\(", "#  \\(", "\\["], ids=["backslashes", "math", "heading-math", "block-math"]
)
def test_pages_that_trafilatura_escapes_quadratically_are_parsed_in_linear_time(run: str) -> None:
    """trafilatura's Markdown escaping rescans a backslash run from each position (80k took
    3.5 s), its math spans a line from each unclosed opener (40k characters: 3.7 s); such a
    page goes to the simple extractor, which keeps the text."""
    body = run * (N // len(run))
    page = f"<html><body><p>[{body}][</p><p>tail text</p></body></html>"
    doc = finishes(lambda: parse_document(page.encode(), "/docs/a.html"))
    assert doc.text.count("\\") == body.count("\\") and doc.text.endswith("tail text")


def test_pages_with_some_math_still_go_through_trafilatura() -> None:
    page = b"<html><body><p>Euler: \\(e^{i\\pi}+1=0\\)</p><p>more text</p></body></html>"
    assert "$e^{i\\pi}+1=0$" in parse_document(page, "/docs/a.html").text
