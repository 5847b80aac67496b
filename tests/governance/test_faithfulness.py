"""Faithfulness on a small labelled question set over the demo corpus
(``fixtures/faithfulness.jsonl``: who asks, the question, the document that must be cited, key
facts the answer must state).

Each answer must cite the labelled document, state the key facts, cite only chunks it was given
and its asker may read, and every sentence must be supported by the chunks it cites. Support is
measured here independently of the workflow's own verifier: plain lower-cased words (no
stemming, no stop list) and figures of the sentence must appear in the cited chunks' text.

Real parts: the demo corpus on local disk, the in-memory index (BM25), the real tokenizer.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bastion import SyncWorkspace
from bastion.demo.corpus import documents, user
from bastion.demo.story import build_story_workspace
from bastion.governance.answer import Answer, AnswerStatus, Context
from bastion.governance.answer.text import answer_sentences

FIXTURE = Path(__file__).parent / "fixtures" / "faithfulness.jsonl"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()
]

MIN_WORD_OVERLAP = 0.9
_WORD = re.compile(r"[a-z0-9]+(?:[.,:'-][a-z0-9]+)*")
_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def unsupported(answer: Answer) -> list[str]:
    """The answer's sentences that the chunks they cite do not support (empty: faithful).

    A sentence is supported when at least ``MIN_WORD_OVERLAP`` of its words, and every figure
    in it, appear in the text of the chunks it cites; a sentence that cites nothing, or cites
    a chunk that is not among the answer's contexts, is unsupported."""
    by_id = {c.chunk_id: c for c in answer.contexts}
    problems = []
    for sentence, ids in answer_sentences(answer.answer):
        cited = [by_id[i] for i in ids if i in by_id]
        if not ids or len(cited) != len(ids):
            problems.append(f"{sentence!r}: cites {ids or 'nothing'} outside its contexts")
            continue
        source = "\n".join(c.text for c in cited)
        words = _words(sentence)
        overlap = len(words & _words(source)) / len(words) if words else 1.0
        figures = set(_FIGURE.findall(sentence)) - set(_FIGURE.findall(source))
        if overlap < MIN_WORD_OVERLAP or figures:
            problems.append(f"{sentence!r}: overlap {overlap:.2f}, figures {sorted(figures)}")
    return problems


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> SyncWorkspace:
    return build_story_workspace(tmp_path_factory.mktemp("faithful") / "corpus")


def test_the_labelled_set_is_well_formed() -> None:
    paths = {doc.path: doc for doc in documents()}
    assert len(CASES) >= 15
    assert len({(c["user"], c["question"]) for c in CASES}) == len(CASES)
    for case in CASES:
        assert case["doc"] in paths, case
        assert case["facts"], case
        body = paths[case["doc"]].text
        for fact in case["facts"]:
            assert fact in body, (case["doc"], fact)
    covered = {paths[c["doc"]].classification for c in CASES}
    assert covered == {"public", "internal", "confidential", "restricted"}
    assert {paths[c["doc"]].tenant for c in CASES} == {"larkspur", "tidewater"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['user']}: {c['question']}" for c in CASES])
def test_the_answer_is_faithful_and_cites_the_right_document(
    ws: SyncWorkspace, case: dict[str, Any]
) -> None:
    view = ws.with_principal(user(case["user"]).principal)
    answer = view.ask(case["question"], mode="bm25")

    assert answer.status is AnswerStatus.ANSWERED
    assert answer.verified
    assert case["doc"] in {c.path for c in answer.citations}
    for fact in case["facts"]:
        assert fact in answer.answer, fact
    context_ids = {c.chunk_id for c in answer.contexts}
    for citation in answer.citations:
        assert citation.chunk_id in context_ids
        assert view.exists(citation.path), "a citation the asker may not read"
        lines = view.read_text(citation.path).splitlines()
        assert 1 <= citation.start_line <= citation.end_line <= len(lines)
    assert unsupported(answer) == []


def _answered(ws: SyncWorkspace, doc: str) -> Answer:
    case = next(c for c in CASES if c["doc"] == doc)
    return ws.with_principal(user(case["user"]).principal).ask(case["question"], mode="bm25")


def test_the_support_check_catches_a_citation_to_the_wrong_chunk(ws: SyncWorkspace) -> None:
    """The check is not vacuous: the same sentence, pointed at another document's chunk, or
    with a figure changed, or citing nothing, is reported."""
    salary = _answered(ws, "/larkspur/hr/salary-bands.md")
    expenses = _answered(ws, "/larkspur/handbook/travel-and-expenses.md")
    assert unsupported(salary) == [] and unsupported(expenses) == []
    good, wrong = salary.contexts[0], expenses.contexts[0]
    moved = salary.answer.replace(good.chunk_id, wrong.chunk_id)
    mixed: tuple[Context, ...] = (*salary.contexts, wrong)
    assert unsupported(replace(salary, answer=moved, contexts=mixed))
    changed = salary.answer.replace("$128,000", "$182,500")
    assert unsupported(replace(salary, answer=changed))
    bare = re.sub(r"\s*§\w+", "", salary.answer)
    assert unsupported(replace(salary, answer=bare))
