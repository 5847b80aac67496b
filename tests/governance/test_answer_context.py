"""Context assembly: greedy by score within a budget counted with the real tokenizer, outliers
left out, the best chunk cut rather than nothing."""

from __future__ import annotations

import pytest

from bastion.core.errors import ConfigurationError
from bastion.governance.answer import Context, assemble
from bastion.knowledge.chunking.tokens import WhitespaceTokenCounter, minilm_token_counter


def _ctx(n: int, score: float, words: int = 10) -> Context:
    text = " ".join(f"word{n}x{i}" for i in range(words))
    return Context(
        chunk_id=f"{n:032x}",
        doc_id="d" * 32,
        path=f"/d{n}.md",
        start_line=1,
        end_line=1,
        text=text,
        score=score,
        retrieval_score=score,
    )


WS = WhitespaceTokenCounter()


def test_greedy_by_score_within_the_budget() -> None:
    # each block is 1 marker token + 10 words = 11 tokens with the whitespace counter
    chunks = [_ctx(1, 0.5), _ctx(2, 0.9), _ctx(3, 0.7), _ctx(4, 0.8, words=30)]
    result = assemble(chunks, budget_tokens=25, counter=WS)
    assert [c.chunk_id for c in result.contexts] == [f"{2:032x}", f"{3:032x}"]
    assert result.over_budget == (f"{4:032x}", f"{1:032x}")
    assert result.tokens == 22 and all(c.tokens == 11 for c in result.contexts)
    assert result.text.startswith(f"§{2:032x}\nword2x0")


def test_low_score_outliers_stay_out_when_better_chunks_fit() -> None:
    chunks = [_ctx(1, 10.0), _ctx(2, 8.0), _ctx(3, 1.0)]
    result = assemble(chunks, budget_tokens=1000, counter=WS)
    assert [c.chunk_id for c in result.contexts] == [f"{1:032x}", f"{2:032x}"]
    assert result.outliers == (f"{3:032x}",)
    kept = assemble(chunks, budget_tokens=1000, counter=WS, outlier_ratio=0.0)
    assert len(kept.contexts) == 3


def test_an_oversized_best_chunk_is_cut_to_fit() -> None:
    counter = minilm_token_counter()
    big = _ctx(1, 1.0, words=400)
    result = assemble([big, _ctx(2, 0.1, words=400)], budget_tokens=64, counter=counter)
    [only] = result.contexts
    assert only.truncated and only.chunk_id == big.chunk_id
    assert only.tokens <= 64
    assert counter.count(only.block()) - counter.special_tokens == only.tokens
    assert big.text.startswith(only.text)
    assert result.over_budget == (f"{2:032x}",)


def test_the_real_tokenizer_counts_the_budget() -> None:
    counter = minilm_token_counter()
    chunks = [_ctx(i, 1.0 - i / 100) for i in range(10)]
    result = assemble(chunks, budget_tokens=200, counter=counter)
    sizes = [counter.count(c.block()) - counter.special_tokens for c in result.contexts]
    assert sizes == [c.tokens for c in result.contexts]
    assert sum(sizes) == result.tokens <= 200
    assert len(result.contexts) + len(result.over_budget) == 10


def test_nothing_in_nothing_out_and_bad_options() -> None:
    assert assemble([], budget_tokens=100, counter=WS).contexts == ()
    with pytest.raises(ConfigurationError):
        assemble([], budget_tokens=5, counter=WS)
    with pytest.raises(ConfigurationError):
        assemble([], budget_tokens=100, counter=WS, outlier_ratio=1.0)
