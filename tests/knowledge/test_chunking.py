"""Chunking with the whitespace counter: strategies, overlap, ids, lines, sections, properties."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core.errors import ConfigurationError
from bastion.knowledge.chunking import (
    Chunker,
    ChunkingConfig,
    Strategy,
    WhitespaceTokenCounter,
    chunk_id,
    chunk_text,
    token_spans,
    violations,
)

WS = WhitespaceTokenCounter()
WS2 = WhitespaceTokenCounter(special_tokens=2)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int


def chunks_of(text: str, strategy: Strategy = Strategy.SECTION, counter=WS, **options):
    config = ChunkingConfig(strategy=strategy, **options)
    chunks = Chunker(config, counter).chunk(text, "doc")
    assert (
        violations(text, chunks, counter=counter, max_tokens=config.max_tokens, doc_id="doc") == []
    )
    return chunks


def words(n: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def sentences(n: int, length: int = 5, prefix: str = "s") -> str:
    return " ".join(
        f"{prefix.capitalize()}{i} " + words(length - 2, f"{prefix}{i}x") + " end."
        for i in range(n)
    )


# -- configuration ------------------------------------------------------------------------------


def test_config_defaults_and_coercion() -> None:
    config = ChunkingConfig()
    assert (config.strategy, config.max_tokens, config.overlap, config.min_size) == (
        Strategy.SECTION,
        256,
        0.10,
        64,
    )
    assert ChunkingConfig(strategy="token").strategy is Strategy.TOKEN  # type: ignore[arg-type]
    assert ChunkingConfig(min_tokens=10).min_size == 10


@pytest.mark.parametrize(
    "options",
    [
        {"strategy": "chapter"},
        {"max_tokens": 0},
        {"max_tokens": 12.5},
        {"overlap": 1.0},
        {"overlap": -0.1},
        {"overlap": float("nan")},
        {"min_tokens": 300},
    ],
)
def test_bad_config_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        ChunkingConfig(**options)  # type: ignore[arg-type]


def test_cap_must_leave_room_after_special_tokens() -> None:
    with pytest.raises(ConfigurationError, match="special tokens"):
        Chunker(ChunkingConfig(max_tokens=2), WS2)


# -- basics -------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", list(Strategy))
@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_empty_text_gives_no_chunks(strategy: Strategy, text: str) -> None:
    assert chunks_of(text, strategy) == []


@pytest.mark.parametrize("strategy", list(Strategy))
def test_small_document_is_one_trimmed_chunk(strategy: Strategy) -> None:
    text = "\n\n  Hello there. General Kenobi!  \n"
    [chunk] = chunks_of(text, strategy)
    assert chunk.text == "Hello there. General Kenobi!"
    assert (chunk.start_line, chunk.end_line, chunk.char_start) == (3, 3, 4)
    assert chunk.token_count == 4
    assert chunk.seq == 0


def test_token_count_includes_special_tokens() -> None:
    [chunk] = chunks_of("one two three", counter=WS2)
    assert chunk.token_count == 5


def test_ids_are_stable_and_known() -> None:
    text = "# T\n\n" + sentences(40)
    first = chunks_of(text, max_tokens=50)
    again = chunks_of(text, max_tokens=50)
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    other = Chunker(ChunkingConfig(max_tokens=50), WS).chunk(text, "other")
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in other}
    # a snapshot: ids must not change between versions (the index upserts by id)
    assert chunk_id("doc", 0, 0, 5, "hello") == "c832729ec731f1d9deec12faf4191d2c"


def test_chunk_many_matches_chunk() -> None:
    texts = [sentences(30), "# A\n\n" + sentences(12), "", words(500)]
    chunker = Chunker(ChunkingConfig(max_tokens=40), WS)
    many = chunker.chunk_many(texts, ["a", "b", "c", "d"])
    assert many == [chunker.chunk(t, d) for t, d in zip(texts, "abcd", strict=True)]
    with pytest.raises(ConfigurationError):
        chunker.chunk_many(texts, ["a"])


def test_split_gives_fitting_windows() -> None:
    text = words(100)
    spans = token_spans(text, 30, WS)
    assert [WS.count(text[a:b]) for a, b in spans] == [30, 30, 30, 10]
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


# -- strategies ---------------------------------------------------------------------------------


def test_sentence_strategy_fills_chunks_and_ends_on_sentences() -> None:
    text = sentences(30, length=7)  # 210 tokens
    chunks = chunks_of(text, Strategy.SENTENCE, max_tokens=50, overlap=0.0)
    assert all(c.text.endswith("end.") for c in chunks)
    assert [c.token_count for c in chunks] == [49, 49, 49, 49, 14]


def test_paragraph_strategy_keeps_paragraphs_whole() -> None:
    paragraphs = [sentences(3, length=6, prefix=f"p{i}") for i in range(8)]  # 18 tokens each
    text = "\n\n".join(paragraphs)
    chunks = chunks_of(text, Strategy.PARAGRAPH, max_tokens=40, overlap=0.0)
    assert [c.text for c in chunks] == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 8, 2)]


def test_paragraph_too_big_is_split_by_sentences_then_words() -> None:
    text = sentences(4, length=6) + "\n\n" + words(130)
    chunks = chunks_of(text, Strategy.PARAGRAPH, max_tokens=50, overlap=0.0, min_tokens=0)
    assert chunks[0].text == sentences(4, length=6)
    assert [c.token_count for c in chunks[1:]] == [50, 50, 30]


def test_section_strategy_starts_chunks_at_headings() -> None:
    text = (
        "# Guide\n\nIntro text here.\n\n## Setup\n\n"
        + sentences(6)
        + "\n\n### Install\n\n"
        + sentences(6)
        + "\n\n## Usage\n\n"
        + sentences(6)
        + "\n"
    )
    chunks = chunks_of(text, Strategy.SECTION, max_tokens=40)
    assert [c.text.split("\n")[0] for c in chunks] == ["# Guide", "### Install", "## Usage"]
    assert [c.section for c in chunks] == ["Guide", "Guide > Setup > Install", "Guide > Usage"]
    assert chunks[1].start_line == text.split("\n").index("### Install") + 1
    # a higher heading wins over a fuller chunk once the chunk has min_tokens
    chunks = chunks_of(text, Strategy.SECTION, max_tokens=40, min_tokens=5)
    assert [c.text.split("\n")[0] for c in chunks] == [
        "# Guide",
        "## Setup",
        "### Install",
        "## Usage",
    ]


def test_section_of_a_chunk_spanning_sections_is_their_common_path() -> None:
    text = "# A\n\n## B\n\nbee text.\n\n## C\n\nsea text.\n"
    [chunk] = chunks_of(text, max_tokens=100)
    assert chunk.section == "A"
    [chunk] = chunks_of("plain text without headings", max_tokens=100)
    assert chunk.section == ""


def test_large_section_is_split_and_keeps_its_path() -> None:
    text = "# Top\n\n## Big\n\n" + "\n\n".join(sentences(4, prefix=f"p{i}") for i in range(10))
    chunks = chunks_of(text, Strategy.SECTION, max_tokens=45)
    assert len(chunks) > 3
    assert all(c.section in ("Top > Big", "Top") for c in chunks)
    assert all(c.section == "Top > Big" for c in chunks[1:])


def test_hash_lines_in_code_are_not_headings() -> None:
    text = "# Real\n\n```bash\n# not a heading\necho hi\n```\n\nAfter the code.\n"
    [chunk] = chunks_of(text, max_tokens=100)
    assert chunk.section == "Real"


def test_headings_from_a_parser_replace_detection() -> None:
    text = "Title\n\nbody one.\n\nPart two\n\nbody two.\n"
    chunker = Chunker(ChunkingConfig(max_tokens=4, min_tokens=0, overlap=0.0), WS)
    chunks = chunker.chunk(
        text, "doc", headings=[Heading(1, "Title", 1), Heading(2, "Part two", 5)]
    )
    assert [(c.text, c.section) for c in chunks] == [
        ("Title\n\nbody one.", "Title"),
        ("Part two\n\nbody two.", "Title > Part two"),
    ]


def test_no_chunk_ends_with_an_orphaned_heading_when_avoidable() -> None:
    text = sentences(6) + "\n\n## Next\n\n" + sentences(6)
    chunks = chunks_of(text, Strategy.SENTENCE, max_tokens=33, overlap=0.0, min_tokens=0)
    assert not any(c.text.endswith("## Next") for c in chunks)


def test_abbreviations_do_not_end_sentences() -> None:
    text = "We used e.g. water. Smith et al. Found it. See Fig. 2 for J. Doe. Then stop."
    chunks = chunks_of(text, Strategy.SENTENCE, max_tokens=6, overlap=0.0, min_tokens=0)
    assert [c.text for c in chunks] == [
        "We used e.g. water.",
        "Smith et al. Found it.",
        "See Fig. 2 for J. Doe.",
        "Then stop.",
    ]


# -- overlap ------------------------------------------------------------------------------------


def test_token_strategy_overlap_is_exact() -> None:
    text = words(1000)
    chunks = chunks_of(text, Strategy.TOKEN, max_tokens=100, overlap=0.2)
    for a, b in pairwise(chunks):
        assert WS.count(text[b.char_start : a.char_end]) == 20
    assert [c.token_count for c in chunks[:-1]] == [100] * (len(chunks) - 1)


def test_token_strategy_without_overlap_tiles_the_text() -> None:
    chunks = chunks_of(words(250), Strategy.TOKEN, max_tokens=100, overlap=0.0)
    assert [c.token_count for c in chunks] == [100, 100, 50]
    assert all(a.char_end < b.char_start for a, b in pairwise(chunks))


@pytest.mark.parametrize("strategy", [Strategy.SENTENCE, Strategy.PARAGRAPH])
def test_structural_overlap_carries_whole_trailing_sentences(strategy: Strategy) -> None:
    text = sentences(40, length=5)
    chunks = chunks_of(text, strategy, max_tokens=52, overlap=0.2)  # budget 10 = two sentences
    for a, b in pairwise(chunks):
        shared = text[b.char_start : a.char_end]
        assert 0 < WS.count(shared) <= 10
        assert shared.endswith("end.") and shared.split()[0].startswith("S")


def test_section_strategy_carries_no_overlap_across_headings() -> None:
    text = "# A\n\n" + sentences(8) + "\n\n# B\n\n" + sentences(8)
    chunks = chunks_of(text, Strategy.SECTION, max_tokens=60, overlap=0.2)
    assert [c.text[:3] for c in chunks] == ["# A", "# B"]
    assert chunks[0].char_end < chunks[1].char_start


# -- oversized units ----------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", list(Strategy))
def test_one_enormous_line_is_split_by_tokens(strategy: Strategy) -> None:
    chunks = chunks_of("x" + words(1000), strategy, max_tokens=64)
    assert max(c.token_count for c in chunks) == 64


def test_tiny_last_chunk_takes_content_from_the_one_before() -> None:
    paragraphs = [sentences(2, length=8, prefix="a"), sentences(2, length=8, prefix="b"), words(6)]
    chunks = chunks_of("\n\n".join(paragraphs), Strategy.PARAGRAPH, max_tokens=34, overlap=0.0)
    assert [c.text for c in chunks] == [paragraphs[0], "\n\n".join(paragraphs[1:])]
    # ... but not at the price of a weaker cut: here only a sentence boundary would do
    text = sentences(4, length=8, prefix="a") + "\n\n" + words(6)
    chunks = chunks_of(text, Strategy.PARAGRAPH, max_tokens=34, overlap=0.0)
    assert [c.token_count for c in chunks] == [32, 6]


# -- properties ---------------------------------------------------------------------------------

WORD = st.one_of(
    st.from_regex(r"[A-Za-z]{1,12}[.,;:!?]?", fullmatch=True),
    st.sampled_from(["e.g.", "Fig.", "3.5", "(see", "it)", "—", "naïve", "東京", "x" * 400]),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=6).map(
        lambda s: "".join(s.split()) or "z"
    ),
)
LINE = st.lists(WORD, min_size=1, max_size=40).map(" ".join)
BLOCK = st.one_of(
    LINE,
    st.tuples(st.integers(1, 6), LINE).map(lambda t: "#" * t[0] + " " + t[1]),
    st.lists(LINE, min_size=1, max_size=5).map(lambda ls: "\n".join(f"- {x}" for x in ls)),
    st.lists(LINE, min_size=1, max_size=4).map(lambda ls: "```\n" + "\n".join(ls) + "\n```"),
    st.lists(LINE, min_size=2, max_size=4).map("\n".join),
)
SEPARATOR = st.sampled_from(["\n\n", "\n", "\n\n\n", "\n \n", " ", "\r\n\r\n", "\t"])
DOCUMENT = st.lists(st.tuples(BLOCK, SEPARATOR), max_size=25).map(
    lambda parts: "".join(b + s for b, s in parts)
)
CONFIG = st.builds(
    ChunkingConfig,
    strategy=st.sampled_from(list(Strategy)),
    max_tokens=st.integers(3, 120),
    overlap=st.sampled_from([0.0, 0.1, 0.25, 0.5]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(DOCUMENT, st.text()), config=CONFIG)
def test_guarantees_hold_for_any_text(text: str, config: ChunkingConfig) -> None:
    chunks = Chunker(config, WS2).chunk(text, "doc")
    assert violations(text, chunks, counter=WS2, max_tokens=config.max_tokens, doc_id="doc") == []
    assert chunks == Chunker(config, WS2).chunk(text, "doc")


@settings(max_examples=50, deadline=None)
@given(text=DOCUMENT, strategy=st.sampled_from(list(Strategy)))
def test_chunk_text_lies_within_its_lines(text: str, strategy: Strategy) -> None:
    lines = text.split("\n")
    for chunk in chunk_text(
        text, "d", config=ChunkingConfig(strategy=strategy, max_tokens=20), counter=WS
    ):
        assert chunk.text in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


@settings(max_examples=100, deadline=None)
@given(
    text=DOCUMENT,
    headings=st.lists(
        st.builds(Heading, st.integers(0, 8), st.text(max_size=5), st.integers(-2, 60))
    ),
    config=CONFIG,
)
def test_any_parser_headings_are_safe(
    text: str, headings: list[Heading], config: ChunkingConfig
) -> None:
    chunks = Chunker(config, WS).chunk(text, "doc", headings=headings)
    assert violations(text, chunks, counter=WS, max_tokens=config.max_tokens) == []
