"""Citations point at the lines the answer took: the table row, the list item, the sentence
holding the figure, each part of a two-part question; the CLI shows them as ``path:12-14``
and the JSON as ``start_line``/``end_line`` (and ``spans``).

Real parts: a workspace over a memory store, the in-memory index, the real tokenizer and the
extractive answerer; keyword retrieval (no model).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bastion import MemoryStore, Mount, Policy, Principal, SyncWorkspace, Workspace
from bastion.cli import main
from bastion.governance.answer import AnswerStatus, Citation, Context
from bastion.governance.answer.locate import cited_lines
from bastion.governance.answer.models import merge_spans
from bastion.governance.answer.text import chunk_passages
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.linemap import chunk_line_map

TRAVEL = """# Travel policy

Staff book travel through the travel desk. Economy class is the rule
for every flight under six hours, and business class needs a director's
approval.

## Hotel caps

| City | Nightly cap |
|---|---|
| London | £210 |
| Paris | €190 |
| Tokyo | ¥24,000 |

## Claims

Claims are filed in the expense tool within 30 days of the trip.

1. Attach every receipt.
2. Add the project code.
3. Submit to your line manager for approval.
"""

ONCALL = """# On-call

## Escalation path

- First the primary on-call engineer.
- Then the secondary on-call engineer.
- Then the engineering manager.

## Paging

Pages are answered within 15 minutes, day or night.
Escalations go to the team lead after 30 minutes without an answer.
"""

DOCS = {"/docs/travel.md": TRAVEL, "/docs/oncall.md": ONCALL}


def _ws() -> SyncWorkspace:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=Principal.of("reader"),
    ).sync()
    for path, text in DOCS.items():
        ws.write(path, text)
    return ws


def _lines_of(citation: Citation) -> str:
    """The text of the file lines the citation points at."""
    lines = DOCS[citation.path].split("\n")
    return "\n".join("\n".join(lines[a - 1 : b]) for a, b in citation.spans)


def _line(path: str, needle: str) -> int:
    """The 1-based line of ``path`` holding ``needle``."""
    return next(i for i, line in enumerate(DOCS[path].split("\n"), 1) if needle in line)


def test_a_table_row_is_cited_by_its_own_line() -> None:
    answer = _ws().ask("What is the nightly hotel cap in Paris?", mode="bm25")
    assert answer.status is AnswerStatus.ANSWERED and answer.verified
    assert "€190" in answer.answer
    (citation,) = answer.citations
    row = _line("/docs/travel.md", "| Paris |")
    assert (citation.start_line, citation.end_line) == (row, row)
    assert "€190" in _lines_of(citation)
    assert citation.chunk_start_line < row < citation.chunk_end_line  # not the whole chunk


def test_a_list_item_is_cited_by_its_line() -> None:
    answer = _ws().ask("Who do you submit expense claims to for approval?", mode="bm25")
    assert answer.status is AnswerStatus.ANSWERED
    assert "line manager" in answer.answer
    (citation,) = answer.citations
    item = _line("/docs/travel.md", "Submit to your line manager")
    assert item in {n for a, b in citation.spans for n in range(a, b + 1)}
    assert "line manager" in _lines_of(citation)
    assert "£210" not in _lines_of(citation)  # the table is not cited


def test_a_sentence_wrapped_over_lines_is_cited_by_all_its_lines() -> None:
    answer = _ws().ask("Which flights need a director's approval for business class?", mode="bm25")
    assert answer.status is AnswerStatus.ANSWERED
    (citation,) = answer.citations
    first = _line("/docs/travel.md", "Economy class is the rule")
    last = _line("/docs/travel.md", "approval.")
    covered = {n for a, b in citation.spans for n in range(a, b + 1)}
    assert {first, first + 1, last} <= covered
    assert "director's" in _lines_of(citation)


def test_both_parts_of_a_two_part_question_are_cited_line_by_line() -> None:
    answer = _ws().ask(
        "How quickly are pages answered, and when do escalations go to the team lead?",
        mode="bm25",
    )
    assert answer.status is AnswerStatus.ANSWERED
    assert "15 minutes" in answer.answer and "30 minutes" in answer.answer
    (citation,) = answer.citations
    pages = _line("/docs/oncall.md", "15 minutes")
    escalations = _line("/docs/oncall.md", "30 minutes")
    assert (citation.start_line, citation.end_line) == (pages, escalations)
    text = _lines_of(citation)
    assert "15 minutes" in text and "30 minutes" in text
    assert "engineering manager" not in text  # the list above is not cited


def test_the_json_carries_start_and_end_lines() -> None:
    answer = _ws().ask("What is the nightly hotel cap in Tokyo?", mode="bm25")
    data = answer.to_dict()
    (cited,) = data["citations"]
    row = _line("/docs/travel.md", "| Tokyo |")
    assert cited["start_line"] == cited["end_line"] == row
    assert cited["lines"] == [row, row] and cited["spans"] == [[row, row]]
    first, last = cited["chunk_lines"]
    assert first <= row <= last
    context = data["contexts"][0]
    assert {"start_line", "end_line"} <= context.keys()


def test_the_cli_prints_path_and_lines(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "travel.md").write_text(TRAVEL, encoding="utf-8")
    folder = tmp_path / "idx"
    runner = CliRunner()
    done = runner.invoke(main, ["index", str(docs), "--index", str(folder), "--keyword-only"])
    assert done.exit_code == 0, done.output
    result = runner.invoke(
        main,
        [
            "ask",
            "What is the nightly hotel cap in London?",
            "--index",
            str(folder),
            "--as",
            "guest",
        ],
    )
    assert result.exit_code == 0, result.output
    row = _line("/docs/travel.md", "| London |")
    assert f"[1] /travel.md:{row}" in result.output.splitlines()
    as_json = runner.invoke(
        main,
        [
            "ask",
            "What is the nightly hotel cap in London?",
            "--index",
            str(folder),
            "--as",
            "guest",
            "--json",
        ],
    )
    (cited,) = json.loads(as_json.output)["citations"]
    assert (cited["n"], cited["start_line"], cited["end_line"]) == (1, row, row)


def _context(text: str, start: int = 10, end: int | None = None, **kw: object) -> Context:
    lines = text.count("\n") + 1
    return Context(
        chunk_id="c" * 32,
        doc_id="d",
        path="/d.md",
        start_line=start,
        end_line=start + lines - 1 if end is None else end,
        text=text,
        score=1.0,
        retrieval_score=1.0,
        **kw,  # type: ignore[arg-type]
    )


def test_passages_keep_their_lines() -> None:
    text = (
        "# T\n\nOne two three. Four five\nsix seven.\n\n| A | B |\n|---|---|\n| x | 1 |\n- an item"
    )
    got = [(p.sentence, p.lines) for p in chunk_passages(text)]
    assert got == [
        ("One two three.", (2, 2)),
        ("Four five six seven.", (2, 3)),
        ("A: x; B: 1", (7, 7)),
        ("an item", (8, 8)),
    ]


def test_a_paraphrase_cites_the_sentence_it_repeats() -> None:
    context = _context("Pages are answered within 15 minutes.\nThe canteen opens at noon.")
    said = f"Within 15 minutes, pages are answered. §{'c' * 32}"
    assert cited_lines(said, [context]) == {"c" * 32: [(10, 10)]}


def test_a_sentence_matched_to_nothing_cites_the_whole_chunk() -> None:
    context = _context("Pages are answered within 15 minutes.\nThe canteen opens at noon.")
    said = f"Something else entirely. §{'c' * 32}"
    taken = cited_lines(said, [context])
    assert taken == {"c" * 32: []}
    citation = Citation.of(context, taken["c" * 32])
    assert (citation.start_line, citation.end_line) == (10, 11)
    assert citation.lines == "10-11"


def test_the_line_map_wins_and_lines_stay_inside_the_chunk() -> None:
    # cleaning squeezed two blank lines: the retriever's map says where each line really is
    context = _context("First line here.\n\nThird line here.", start=5, end=8, line_map=(5, 6, 8))
    assert context.file_lines(2, 2) == (8, 8)
    plain = _context("First line here.\n\nThird line here.", start=5)
    assert plain.file_lines(0, 5) == (5, 7)  # never past the chunk's end


def test_spans_merge_and_print_apart() -> None:
    assert merge_spans([(9, 10), (3, 3), (4, 4)]) == ((3, 4), (9, 10))
    citation = Citation.of(_context("a\nb\nc\nd\ne\nf", start=3), [(9, 10), (3, 3)])
    assert citation.lines == "3, 9-10"
    assert (citation.start_line, citation.end_line) == (3, 10)


SQUEEZED = """# Rota



The rota is drawn up by the duty manager.



Night shifts pay a supplement of 25 percent.
"""


def test_lines_squeezed_by_cleaning_are_counted_in_the_file() -> None:
    """Cleaning keeps one blank line of a run: the chunk has fewer lines than the file, and
    the citation still names the file's own line."""
    ws = _ws()
    ws.write("/docs/rota.md", SQUEEZED)
    answer = ws.ask("What supplement do night shifts pay?", mode="bm25")
    assert answer.status is AnswerStatus.ANSWERED and "25 percent" in answer.answer
    (citation,) = answer.citations
    line = next(i for i, text in enumerate(SQUEEZED.split("\n"), 1) if "25 percent" in text)
    assert (citation.start_line, citation.end_line) == (line, line)
    context = next(c for c in answer.contexts if c.chunk_id == citation.chunk_id)
    assert context.text.count("\n") + 1 < context.end_line - context.start_line + 1


def test_chunk_line_map_aligns_a_chunk_with_its_stretch_of_the_file() -> None:
    source = "intro\n\n\n\nfirst line\n\n\n\nsecond line\ntail"
    assert chunk_line_map(source, 5, 9, "first line\n\nsecond line") == (5, 6, 9)
    assert chunk_line_map(source, 5, 5, "first line") == ()  # as many lines as its range
