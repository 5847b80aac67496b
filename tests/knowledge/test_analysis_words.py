"""The keyword analyzer's words are scikit-learn's (bm25s's) ``\\b\\w\\w+\\b`` words, found faster."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.analysis import Analyzer

REFERENCE = re.compile(r"(?u)\b\w\w+\b")
ANALYZER = Analyzer()


def _reference(text: str) -> list[str]:
    return REFERENCE.findall(unicodedata.normalize("NFKC", text).lower())


_CHARS = st.characters(min_codepoint=0, max_codepoint=0x7F) | st.sampled_from(
    "éßİıſﬁ²½日本_—\u00a0\u200b\u0301Ǆ"
)


@settings(max_examples=400, deadline=None)
@given(st.text(_CHARS, max_size=60))
def test_words_match_the_reference_pattern(text: str) -> None:
    assert ANALYZER.words(text) == _reference(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a b c",
        "ab",
        "Hello, World! x_y 3.14 a1 _ __ e.g. naïve café ﬁle Straße",
        "CamelCase and snake_case and UPPER",
        "one-letter: a, I; two: an, of",
    ],
)
def test_words_of_examples(text: str) -> None:
    assert ANALYZER.words(text) == _reference(text)


def test_stop_words_and_stems_follow_the_words() -> None:
    assert ANALYZER.analyze("The running dogs, and a cat's toys") == ["run", "dog", "cat", "toy"]
