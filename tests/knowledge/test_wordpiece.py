"""The ASCII fast path of the MiniLM token counter gives the tokenizer's own tokens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from bastion.knowledge.chunking.tokens import minilm_token_counter
from bastion.knowledge.chunking.wordpiece import AsciiWordPiece

ROOT = Path(__file__).resolve().parents[2]
COUNTER = minilm_token_counter()
FAST = COUNTER._fast


def _same(text: str) -> None:
    [got] = COUNTER.tokenize_batch([text])
    [want] = COUNTER.tokenize_slow([text])
    assert list(got.starts) == list(want.starts)
    assert list(got.words) == list(want.words)


def test_the_packaged_tokenizer_has_the_fast_path() -> None:
    assert FAST is not None


@pytest.mark.parametrize(
    "path",
    sorted([*ROOT.joinpath("docs").glob("*.md"), *ROOT.joinpath("src/bastion/demo").rglob("*.md")]),
    ids=lambda p: p.name,
)
def test_real_documents_tokenize_as_the_tokenizer_does(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    _same(text)
    ascii_lines = "\n".join(line for line in text.splitlines() if line.isascii())
    plain = re.sub(r"\[(CLS|SEP|PAD|MASK|UNK)\]", "", ascii_lines, flags=re.IGNORECASE)
    assert FAST is not None and FAST.covers(plain)
    _same(plain)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t\r\n",
        "Hello, world! It's 3.14159 -- e.g. (foo_bar) [x] {y} <z> a@b.c #tag $5 ~ ^ ` | \\ /",
        "unaffable antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        "x" * 101 + " " + "y" * 100,  # over WordPiece's 100 characters: one unknown token
        "CamelCaseWords and UPPER and MiXeD123abc456",
        "a\r\nb\rc\td",
    ],
)
def test_edge_cases_match(text: str) -> None:
    assert FAST is not None and FAST.covers(text)
    _same(text)


@pytest.mark.parametrize(
    "text",
    [
        "naïve café",  # accents are stripped by the normalizer
        "日本語のテキスト",  # CJK characters are spaced
        "a\x0bb and c\x00d",  # control characters vanish, joining the words around them
        "before [CLS] after",
        "a [mask] token, any case",
        "em — dash and “quotes”",
    ],
)
def test_texts_outside_the_fast_path_go_to_the_tokenizer(text: str) -> None:
    assert FAST is not None and not FAST.covers(text)
    _same(text)


_PIECES = st.sampled_from(
    ["the", "tokenizer", "##", "un", "affable", "[", "]", "CLS", "sep", "Mask", "42", "x" * 99]
)
_CHARS = st.characters(min_codepoint=0, max_codepoint=0x7F) | st.sampled_from("éß日—\u00a0\u200b")


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(_CHARS, max_size=12), max_size=30).map("".join))
def test_any_text_tokenizes_as_the_tokenizer_does(text: str) -> None:
    _same(text)


def test_a_tokenizer_of_another_kind_has_no_fast_path() -> None:
    other = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    assert AsciiWordPiece.of(other) is None


@pytest.mark.parametrize(
    "text",
    [
        "a naïve café, then plain words after it",
        "plain words first, then non\u00a0breaking and zero\u200bwidth inside, more words",
        "日本語 beside English, and a “quoted” phrase — with a dash",
        "line one\r\nnaïve line two\n\tstraße three",
        "ends with an accent: é",
        "é starts it",
        "a plain start, then tab\u000bvertical and form\u000cfeed, and a plain end",
    ],
)
def test_mostly_ascii_text_keeps_the_fast_path_around_its_other_runs(text: str) -> None:
    assert FAST is not None
    plan = FAST.plan(text)
    assert plan is not None and any(plain for _, _, plain in plan)
    assert [a for a, _, _ in plan] == [0, *(b for _, b, _ in plan[:-1])]  # contiguous
    assert plan[-1][1] == len(text)
    _same(text)


_WORDS = st.sampled_from(["plain", "words", "Fig.", "e.g.", "(x)", "3.5", "naïve", "日本", "“q”"])
_GAPS = st.sampled_from([" ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u200b", "\x0b", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_WORDS, _GAPS), max_size=40))
def test_mixed_text_tokenizes_as_the_tokenizer_does(pairs: list[tuple[str, str]]) -> None:
    _same("".join(word + gap for word, gap in pairs))


def test_a_text_of_mostly_other_characters_goes_to_the_tokenizer_whole() -> None:
    assert FAST is not None
    assert FAST.plan("日本語のテキスト and") is None
    assert FAST.plan("plain [SEP] text") is None
