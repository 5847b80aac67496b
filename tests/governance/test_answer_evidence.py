"""Answerability from the evidence (``governance/answer/evidence.py``) and the extractive
answerer that answers the question asked: spelling variants, table rows, list items holding a
figure, two-part questions across sections, names no readable chunk holds, and the honest
verdict of a refusal."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from bastion.core.text import TokenCounter
from bastion.governance.answer import (
    NO_ANSWER,
    NO_CONTEXT,
    Answer,
    AnswerStatus,
    AnswerWorkflow,
    AuditTrail,
    Citation,
    Context,
    ExtractiveAnswerer,
    Retrieval,
    Verification,
)
from bastion.governance.answer.evidence import (
    names,
    question_parts,
    wants_figure,
    weigh,
    with_similarities,
)
from bastion.governance.answer.spelling import fold_spelling
from bastion.governance.answer.text import chunk_passages, terms
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

A, B, C = "a" * 32, "b" * 32, "c" * 32

LEAVE = """# Leave Policy

## Annual Leave

Annual leave grows with length of service.

| Length of service | Annual leave |
| --- | --- |
| Under 2 years | 25 days |
| 2 to 5 years | 27 days |

### Booking Leave

Requests are authorised by your line manager, who replies within 3 working days.

## Volunteering

Each employee may take 2 paid volunteering days a year for a registered charity programme.
"""

TRAVEL = """# Travel Policy

## Daily Allowances

| City | Nightly hotel cap | Daily meal allowance |
| --- | --- | --- |
| London | £220 | £60 |
| Paris | €240 | €70 |
"""

ONCALL = """# Engineering Handbook

## On-Call Rotation

### Response Times

- P0 (Critical): 15 minutes
- P1 (High): 30 minutes

## Technology Stack

### Infrastructure

- AWS as primary cloud provider
- DataDog for monitoring
"""


def _counter() -> TokenCounter:
    return Knowledge(MemoryIndex()).chunker.counter


def _ctx(chunk_id: str, text: str, path: str = "/doc.md") -> Context:
    return Context(
        chunk_id=chunk_id,
        doc_id="d-" + chunk_id[:4],
        path=path,
        start_line=1,
        end_line=text.count("\n") + 1,
        text=text,
        score=1.0,
        retrieval_score=1.0,
    )


def _answer(question: str, *contexts: Context) -> str:
    return ExtractiveAnswerer().compose(question, contexts).text


def test_spelling_variants_fold_to_one_form() -> None:
    assert fold_spelling("authorised organisation programme licence counselling") == (
        "authorized organization program license counseling"
    )
    assert terms("Who authorizes leave?") & terms("Requests are authorised by managers")
    assert fold_spelling("four hours, your tour") == "four hours, your tour"  # short -our kept


def test_a_question_in_american_english_is_answered_from_british_text() -> None:
    text = _answer("Who authorizes leave requests?", _ctx(A, LEAVE))
    assert "line manager" in text and f"§{A}" in text
    text = _answer("How many volunteering days are there for a charity program?", _ctx(A, LEAVE))
    assert "2 paid volunteering days" in text


def test_table_rows_are_sentences_named_by_their_columns() -> None:
    rows = [p.sentence for p in chunk_passages(TRAVEL, "Travel Policy")]
    assert "City: Paris; Nightly hotel cap: €240; Daily meal allowance: €70" in rows
    assert not any(r.startswith("City; ") or "---" in r for r in rows)  # header, rule: no rows


def test_the_row_asked_for_is_the_row_quoted() -> None:
    text = _answer("What is the nightly hotel cap in Paris?", _ctx(A, TRAVEL))
    assert "€240" in text and "£220" not in text


def test_a_list_item_holding_the_figure_under_the_heading_is_quoted() -> None:
    text = _answer("What is the response time for a P1 incident?", _ctx(A, ONCALL))
    assert "30 minutes" in text and "15 minutes" not in text


def test_both_parts_of_a_two_part_question_are_answered_from_two_sections() -> None:
    question = "Which cloud provider do we use, and what tool is used for monitoring?"
    assert question_parts(question) == (
        "Which cloud provider do we use",
        "what tool is used for monitoring",
    )
    infra, stack = _ctx(A, ONCALL), _ctx(B, LEAVE)
    text = _answer(question, stack, infra)
    assert "AWS" in text and "DataDog" in text and f"§{A}" in text and f"§{B}" not in text


def test_two_part_question_whose_parts_sit_in_two_chunks_cites_both() -> None:
    question = "What is the hotel cap in London, and who authorizes leave requests?"
    text = _answer(question, _ctx(A, TRAVEL), _ctx(B, LEAVE))
    assert "£220" in text and "line manager" in text
    assert f"§{A}" in text and f"§{B}" in text


def test_parts_without_a_topic_of_their_own_stay_whole() -> None:
    assert question_parts("What is the CEO's base salary?") == ("What is the CEO's base salary?",)
    assert len(question_parts("How many days, and by when?")) == 1


def test_figure_questions_and_names() -> None:
    assert wants_figure("How long must a password be?")
    assert wants_figure("When do pay reviews take effect?")
    assert not wants_figure("Who approves business class?")
    assert names("What is the daily allowance in Tokyo?") == terms("Tokyo")
    assert names("What is the band maximum for grade G3?") == terms("G3")
    assert names("What is the response time?") == frozenset()


def test_a_name_no_retrieved_chunk_holds_is_not_answered() -> None:
    """Near misses: the question's city is in no chunk, however close the rest is."""
    scores = weigh("What is the daily meal allowance in Tokyo?", [_ctx(A, TRAVEL)], absent=True)
    workflow = AnswerWorkflow(counter=_counter())
    answer = _run(workflow, "What is the daily meal allowance in Tokyo?", [_ctx(A, TRAVEL)])
    assert max(s.score for s in scores) < 0.5
    assert answer.answer == NO_CONTEXT and answer.citations == ()
    asked = _run(workflow, "What is the daily meal allowance in Paris?", [_ctx(A, TRAVEL)])
    assert "€70" in asked.answer and asked.verified


def test_similarities_are_attached_per_sentence_and_part() -> None:
    calls: list[tuple[Sequence[str], Sequence[str]]] = []

    async def similarity(queries: Sequence[str], texts: Sequence[str]) -> list[list[float]]:
        calls.append((queries, texts))
        return [[0.5 for _ in texts] for _ in queries]

    question = "Which cloud provider do we use, and what tool is used for monitoring?"
    [context] = asyncio.run(with_similarities(question, [_ctx(A, ONCALL)], similarity))
    # one call: the question, its two parts, and "tool", the topic word no chunk holds
    assert len(calls) == 1 and calls[0][0][1:] == [*question_parts(question), "tool"]
    assert all(len(v) == 3 for v in context.similarities.values())
    assert "Technology Stack > Infrastructure > DataDog for monitoring" in context.similarities
    assert context.term_similarities == {"tool": 0.5}


def test_similarity_lets_a_paraphrase_through_that_terms_alone_refuse() -> None:
    question = "How much vacation does a new starter get?"
    plain = _ctx(A, LEAVE)

    async def similar(queries: Sequence[str], texts: Sequence[str]) -> list[list[float]]:
        return [[0.8 if "25 days" in t else 0.1 for t in texts] for _ in queries]

    workflow = AnswerWorkflow(counter=_counter())
    assert _run(workflow, question, [plain]).status is AnswerStatus.NO_CONTEXT
    with_vectors = AnswerWorkflow(counter=_counter(), similarity=similar)
    answer = _run(with_vectors, question, [plain])
    assert answer.status is AnswerStatus.ANSWERED and "25 days" in answer.answer


class _Retriever:
    def __init__(self, contexts: list[Context]) -> None:
        self.contexts = contexts

    async def retrieve(self, question: str) -> Retrieval:
        return Retrieval(contexts=tuple(self.contexts), mode="hybrid")

    def may_read(self, context: Context) -> bool:
        return True


class _Sink:
    def __init__(self) -> None:
        self.records: list[object] = []

    def append(self, record: object) -> None:
        self.records.append(record)


def _run(workflow: AnswerWorkflow, question: str, contexts: list[Context]) -> Answer:
    from bastion.core.principal import Principal

    trail = AuditTrail(_Sink(), Principal.of("tester"))  # type: ignore[arg-type]
    return asyncio.run(workflow.run(question, _Retriever(contexts), trail))


@pytest.mark.parametrize("status", [AnswerStatus.NO_CONTEXT, AnswerStatus.NO_ANSWER])
def test_a_refusal_is_never_verified_and_says_why_without_naming_anything(
    status: AnswerStatus,
) -> None:
    text = NO_CONTEXT if status is AnswerStatus.NO_CONTEXT else NO_ANSWER
    refusal = Answer(answer=text, status=status, verification=Verification(passed=True))
    assert not refusal.verified
    assert refusal.verdict.startswith("Not answered: ")
    assert "verified" not in refusal.format().lower()
    assert "you can read" in refusal.verdict


def test_only_a_cited_checked_answer_is_verified() -> None:
    cited = Citation(chunk_id=A, doc_id="d", path="/doc.md", start_line=1, end_line=2)
    good = Answer(answer=f"x §{A}", citations=(cited,), verification=Verification(passed=True))
    assert good.verified and good.verdict.startswith("Verified: ")
    bare = Answer(answer="x", verification=Verification(passed=True))
    assert not bare.verified and bare.verdict.startswith("Not verified")
    off = Answer(answer=f"x §{A}", citations=(cited,), verification=None)
    assert not off.verified and "switched off" in off.verdict


def test_an_absent_word_is_matched_by_meaning_or_left_unmatched() -> None:
    from dataclasses import replace

    from bastion.governance.answer.evidence import absent_words, held, unmatched

    context = _ctx(A, LEAVE)
    question = "How many sabbatical days do employees get?"
    assert absent_words(question, [context]) == {next(iter(terms("sabbatical"))): "sabbatical"}
    topic = terms("sabbatical days employees")
    [gap] = unmatched(topic, [context], held([context]))  # no vectors: absent is unmatched
    assert gap == next(iter(terms("sabbatical")))
    close = replace(context, term_similarities={gap: 0.9})
    assert unmatched(topic, [close], held([close])) == frozenset()


def test_codes_in_any_case_are_names() -> None:
    assert names("What is the p75 API response time target?") == terms("p75 API")
    scores = weigh("What is the p75 response time?", [_ctx(A, ONCALL)], absent=True)
    assert max(s.score for s in scores) < 0.5
