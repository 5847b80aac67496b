"""Chunking with the real all-MiniLM-L6-v2 tokenizer, on the demo Markdown and on SciFact."""

from __future__ import annotations

import json
from itertools import islice, pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.knowledge.chunking import (
    Chunker,
    ChunkingConfig,
    HuggingFaceTokenCounter,
    Strategy,
    minilm_token_counter,
    violations,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DEMO = sorted((SHARED / "data" / "governed-rag-demo" / "v1-original").glob("*.md"))
SCIFACT = SHARED / "data" / "scifact" / "corpus.jsonl"


@pytest.fixture(scope="module")
def counter() -> HuggingFaceTokenCounter:
    return minilm_token_counter()


def test_the_demo_documents_are_there() -> None:
    assert len(DEMO) >= 4


def test_counts_match_what_the_model_sees(counter: HuggingFaceTokenCounter) -> None:
    assert counter.special_tokens == 2
    assert counter.count("") == 2
    assert counter.count("Hello, world!") == 6  # [CLS] hello , world ! [SEP]
    long = "word " * 300
    assert counter.count(long) == 302  # the packaged tokenizer.json truncates at 128: not here
    assert counter.count_batch(["a b", long]) == [4, 302]
    tokens = counter.tokenize("Naïve café")
    assert list(tokens.starts) == [0, 6] and list(tokens.words) == [0, 1]


@pytest.mark.parametrize("strategy", list(Strategy))
@pytest.mark.parametrize("path", DEMO, ids=[p.name for p in DEMO])
def test_demo_documents_keep_every_guarantee(
    path: Path, strategy: Strategy, counter: HuggingFaceTokenCounter
) -> None:
    text = path.read_text(encoding="utf-8")
    config = ChunkingConfig(strategy=strategy)
    chunks = Chunker(config, counter).chunk(text, path.stem)
    assert violations(text, chunks, counter=counter, max_tokens=256, doc_id=path.stem) == []
    assert len(chunks) >= 1
    lines = text.split("\n")
    for chunk in chunks:
        assert chunk.text in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    if strategy in (Strategy.PARAGRAPH, Strategy.SECTION):
        assert all(c.token_count >= 64 for c in chunks[:-1]), [c.token_count for c in chunks]


def test_demo_sections_name_their_headings(counter: HuggingFaceTokenCounter) -> None:
    path = next(p for p in DEMO if p.name == "engineering-handbook.md")
    chunks = Chunker(ChunkingConfig(max_tokens=96), counter).chunk(path.read_text(), "eh")
    sections = [c.section for c in chunks]
    assert all(s.startswith("Engineering Team Handbook") for s in sections)
    assert "Engineering Team Handbook > On-Call Rotation" in sections
    on_call = next(c for c in chunks if c.section.endswith("On-Call Rotation"))
    assert on_call.text.startswith("## On-Call Rotation")
    assert "15 minutes" in on_call.text


def test_token_windows_overlap_by_exactly_ten_percent(counter: HuggingFaceTokenCounter) -> None:
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in DEMO)
    chunks = Chunker(ChunkingConfig(strategy=Strategy.TOKEN), counter).chunk(text, "all")
    assert len(chunks) > 5
    starts = list(counter.tokenize(text).starts)
    for a, b in pairwise(chunks):
        shared = sum(b.char_start <= s < a.char_end for s in starts)
        assert shared == round(0.1 * 254)
    assert all(c.token_count == 256 for c in chunks[:-1])


def _scifact(limit: int) -> list[tuple[str, str]]:
    with SCIFACT.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in islice(lines, limit)]
    return [(str(r["_id"]), f"{r['title']}\n\n{r['text']}") for r in rows]


@pytest.mark.parametrize("strategy", list(Strategy))
def test_scifact_sample_keeps_every_guarantee(
    strategy: Strategy, counter: HuggingFaceTokenCounter
) -> None:
    docs = _scifact(400)
    per_doc = Chunker(ChunkingConfig(strategy=strategy), counter).chunk_many(
        [t for _, t in docs], [d for d, _ in docs]
    )
    for (doc_id, text), chunks in zip(docs, per_doc, strict=True):
        assert violations(text, chunks, counter=counter, max_tokens=256, doc_id=doc_id) == []
        if strategy is not Strategy.TOKEN:
            assert all(c.token_count >= 64 for c in chunks[:-1])


TRICKY = st.sampled_from(
    [
        "supercalifragilisticexpialidocious",
        "x\x00y",
        "a\x1cb",
        "naïve",
        "e\u0301",
        "東京は",
        "ﬁne",
        "İstanbul",
        "https://example.com/a_b?c=d",
        "3.5",
        "e.g.",
        "—",
        "\ufffd",
        "😀",
        "a" * 150,
    ]
)
WORDS = st.lists(
    st.one_of(
        TRICKY,
        st.from_regex(r"[A-Za-z]{1,10}[.!?,]?", fullmatch=True),
        st.text(min_size=1, max_size=4),
    ),
    max_size=200,
)
SEPARATORS = st.lists(st.sampled_from([" ", " ", " ", "\n", "\n\n", "\n# ", "\n## ", "\t", ". "]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=WORDS,
    separators=SEPARATORS,
    strategy=st.sampled_from(list(Strategy)),
    max_tokens=st.integers(4, 80),
    overlap=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_guarantees_hold_with_the_real_tokenizer(
    words: list[str], separators: list[str], strategy: Strategy, max_tokens: int, overlap: float
) -> None:
    counter = minilm_token_counter()
    text = "".join(
        w + (separators[i % len(separators)] if separators else " ") for i, w in enumerate(words)
    )
    config = ChunkingConfig(strategy=strategy, max_tokens=max_tokens, overlap=overlap)
    chunks = Chunker(config, counter).chunk(text, "doc")
    assert violations(text, chunks, counter=counter, max_tokens=max_tokens, doc_id="doc") == []
