"""Pure parts of the answer workflow: markers, sentences, reasoning, the extractive answerer
and the deterministic verifier, as small decision tables."""

from __future__ import annotations

import pytest

from bastion.core.errors import ConfigurationError
from bastion.governance.answer import NO_ANSWER, Context, ExtractiveAnswerer, Verifier
from bastion.governance.answer.text import (
    answer_sentences,
    chunk_sentences,
    cited_ids,
    json_object,
    number_markers,
    strip_reasoning,
)

A = "a" * 32
B = "b" * 32


def _ctx(chunk_id: str, text: str, score: float = 1.0, path: str = "/d.md") -> Context:
    return Context(
        chunk_id=chunk_id,
        doc_id="d" * 32,
        path=path,
        start_line=1,
        end_line=text.count("\n") + 1,
        text=text,
        score=score,
        retrieval_score=score,
    )


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        (f"One. §{A} Two. §{B}", (A, B)),
        (f"One [§{A}], two [§{B}] and one again §{A}.", (A, B)),
        ("The law says § 12 and §12a apply.", ()),  # a section sign is not a citation
        ("no markers", ()),
    ],
)
def test_cited_ids(text: str, ids: tuple[str, ...]) -> None:
    assert cited_ids(text) == ids


def test_answer_sentences_attach_trailing_markers_to_their_sentence() -> None:
    text = f"Deploys run on Tuesdays. §{A} Rollbacks need approval §{B}.\nA third line. [§{A}]"
    assert answer_sentences(text) == [
        ("Deploys run on Tuesdays.", (A,)),
        ("Rollbacks need approval .", (B,)),
        ("A third line.", (A,)),
    ]


def test_chunk_sentences_skip_headings_and_split_lists_and_prose() -> None:
    text = (
        "# Deploying\n\nWe deploy on Tuesdays. Rollbacks need the release\nmanager's approval.\n\n"
        "1. Run the test suite.\n2. Tag the release now.\n\n| a | b |\n|---|---|\n\n---\nOk.\n"
    )
    assert chunk_sentences(text) == [
        "We deploy on Tuesdays.",
        "Rollbacks need the release manager's approval.",
        "Run the test suite.",
        "Tag the release now.",
    ]


def test_reasoning_is_stripped_even_when_unclosed() -> None:
    assert strip_reasoning("<think>step 1\nstep 2</think>\nThe answer.") == "The answer."
    assert strip_reasoning("The answer. <THINKING>hmm") == "The answer."


def test_json_object_reads_the_first_object_of_a_chatty_reply() -> None:
    assert json_object('Here: ```json\n{"p1": 3}\n```') == {"p1": 3}
    assert json_object("<think>{not this}</think> nothing") is None
    assert json_object("{broken") is None


def test_number_markers_for_a_terminal() -> None:
    assert number_markers(f"X. §{A} Y. [§{B}] Z §{'c' * 32}", {A: 1, B: 2}) == (
        f"X. [1] Y. [2] Z §{'c' * 32}"
    )


# -- the extractive answerer ------------------------------------------------------------------------


def test_extractive_answer_picks_the_best_sentences_and_cites_them() -> None:
    contexts = [
        _ctx(A, "# On-call\n\nThe pager rotates weekly. Pages are answered within 15 minutes."),
        _ctx(B, "Deploys happen on Tuesdays.\n\nPages are answered within 15 minutes!"),
    ]
    draft = ExtractiveAnswerer().compose("How fast are pages answered?", contexts)
    assert draft.text == f"Pages are answered within 15 minutes. §{A}"  # the duplicate went
    assert not draft.no_answer


def test_extractive_answer_is_deterministic_and_quotes_only_the_best_contexts() -> None:
    contexts = [
        _ctx(A, "Canary deploys go out on Tuesdays. The canary watches error rates."),
        _ctx(B, "Billing deploys use a canary and go out on Tuesdays with billing checks."),
    ]
    answerer = ExtractiveAnswerer()
    first = answerer.compose("billing canary deploys Tuesdays", contexts)
    assert first == answerer.compose("billing canary deploys Tuesdays", contexts)
    # B covers every term of the question, A three of four: A would only pad the answer.
    assert first.text == f"{contexts[1].text} §{B}"


def test_extractive_answer_keeps_reading_order_within_a_word_budget() -> None:
    text = (
        "Canary deploys go out on Tuesdays. Canary deploys need a green build. "
        "Canary deploys are watched for an hour."
    )
    draft = ExtractiveAnswerer().compose("canary deploys", [_ctx(A, text)])
    assert [line.removesuffix(f" §{A}") for line in draft.text.splitlines()] == [
        "Canary deploys go out on Tuesdays.",
        "Canary deploys need a green build.",
        "Canary deploys are watched for an hour.",
    ]
    short = ExtractiveAnswerer(max_words=5).compose("canary deploys", [_ctx(A, text)])
    assert short.text == f"Canary deploys go out on Tuesdays. §{A}"


def test_extractive_answer_without_a_matching_sentence() -> None:
    draft = ExtractiveAnswerer().compose("kubernetes", [_ctx(A, "Deploys happen on Tuesdays.")])
    assert draft.no_answer and draft.text == NO_ANSWER
    assert ExtractiveAnswerer().compose("the of and", [_ctx(A, "Deploys on Tuesdays.")]).no_answer


def test_extractive_options_are_checked() -> None:
    with pytest.raises(ConfigurationError):
        ExtractiveAnswerer(max_words=0)
    with pytest.raises(ConfigurationError):
        ExtractiveAnswerer(floor=0)


# -- the deterministic verifier ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "passed", "problem"),
    [
        (f"Deploys happen on Tuesdays. §{A}", True, None),
        (f"Deploys happen on Tuesdays. §{B}", False, f"cites §{B}, which is not one of"),
        ("Deploys happen on Tuesdays.", False, "sentence 1 cites no context"),
        (f"Deploys happen on Fridays at noon. §{A}", False, "sentence 1 is not supported"),
        (f"Deploys happen on Tuesdays. They happen on Tuesdays. §{A}", True, None),
        (f"Deploys happen on Tuesdays at 9. §{A}", False, "sentence 1 states 1 number(s)"),
        ("", True, None),
    ],
)
async def test_verifier_decisions(answer: str, passed: bool, problem: str | None) -> None:
    contexts = [_ctx(A, "# Deploys\n\nDeploys happen on Tuesdays.")]
    result = await Verifier().verify(answer, contexts)
    assert result.passed is passed
    if problem is not None:
        assert any(p.startswith(problem) for p in result.problems), result.problems


async def test_verifier_asks_whether_a_cited_chunk_is_still_readable() -> None:
    contexts = [_ctx(A, "Deploys happen on Tuesdays.")]
    result = await Verifier().verify(f"Deploys happen on Tuesdays. §{A}", contexts, lambda c: False)
    assert not result.passed
    assert result.problems[0] == f"cites §{A}, which the asker may no longer read"


def test_verifier_options_are_checked() -> None:
    with pytest.raises(ConfigurationError):
        Verifier(min_overlap=0)
