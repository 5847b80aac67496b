"""A batch of texts through the ASCII fast path gives each text the tokenizer's own tokens."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core.text import Tokens
from bastion.knowledge.chunking import wordpiece
from bastion.knowledge.chunking.tokens import minilm_token_counter

COUNTER = minilm_token_counter()
FAST = COUNTER._fast


def _pairs(tokenized: list[Tokens]) -> list[tuple[list[int], list[int]]]:
    return [(list(t.starts), list(t.words)) for t in tokenized]


def _check(texts: list[str]) -> None:
    assert FAST is not None
    got = FAST.tokenize_many(texts)
    want = COUNTER.tokenize_slow(texts)
    assert _pairs(got) == _pairs(want)


_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\t\n\r")
_WORDS = st.sampled_from(
    ["the", "Tokenizer", "un", "affable", "antidisestablishmentarianism", "3.14", "e.g.", "x" * 101]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_WORDS | st.text(_ASCII, max_size=10), max_size=20).map(" ".join)))
def test_each_text_of_a_batch_tokenizes_as_the_tokenizer_does(texts: list[str]) -> None:
    _check(texts)


def test_empty_texts_and_texts_of_spaces_keep_their_places() -> None:
    _check(["", "one", "", "  \n ", "(two)", "", "unaffable!"])
    assert FAST is not None and FAST.tokenize_many([]) == []


def test_a_text_of_one_token_per_word_gets_its_word_numbers_as_a_range() -> None:
    assert FAST is not None
    [tokens] = FAST.tokenize_many(["plain words, here."])
    assert isinstance(tokens.words, range) and list(tokens.starts) == [0, 6, 11, 13, 17]


def test_the_table_of_splits_starts_again_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wordpiece, "_KEPT", 8)
    texts = [f"word{i} unaffable antidisestablishmentarianism w{i}x{i}" for i in range(40)]
    for lo in range(0, len(texts), 5):
        _check(texts[lo : lo + 5])
    assert FAST is not None and len(FAST._table.numbers) <= 8 + 5 * 4
