"""EmbeddingCache and CachedEmbedder: hits never reach the model, rows keep input order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bastion.core.errors import StoreError
from bastion.knowledge.embedders import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    HashingEmbedder,
    Vectors,
    text_key,
)


class CountingEmbedder(Embedder):
    """A fake of our own port: hashing vectors, and a record of every text it was asked for."""

    def __init__(self, name: str = "counting", dim: int = 16) -> None:
        self._inner = HashingEmbedder(dim)
        self.name = name
        self.dim = dim
        self.max_tokens = 100
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return await self._inner.embed(texts)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)


@pytest.fixture(params=["memory", "file"])
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> EmbeddingCache:
    return EmbeddingCache(None if request.param == "memory" else tmp_path / "emb.db")


async def test_hits_do_not_call_the_inner_embedder(cache: EmbeddingCache) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache)
    first = await cached.embed(["a", "b", "c"])
    assert inner.calls == [["a", "b", "c"]]
    second = await cached.embed(["c", "a", "b"])
    assert inner.calls == [["a", "b", "c"]]  # no new call
    np.testing.assert_array_equal(second, first[[2, 0, 1]])
    assert (cached.hits, cached.misses) == (3, 3)


async def test_only_misses_are_sent_once_each_in_input_order(cache: EmbeddingCache) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache)
    await cached.embed(["known"])
    texts = ["new1", "known", "new2", "new1", "known", "new3"]
    out = await cached.embed(texts)
    assert inner.calls[-1] == ["new1", "new2", "new3"]
    np.testing.assert_array_equal(out, await inner._inner.embed(texts))


async def test_keys_include_the_model_name(cache: EmbeddingCache) -> None:
    a, b = CountingEmbedder("model-a"), CountingEmbedder("model-b")
    await CachedEmbedder(a, cache).embed(["same text"])
    await CachedEmbedder(b, cache).embed(["same text"])
    assert len(a.calls) == len(b.calls) == 1
    assert cache.count() == 2
    assert cache.count("model-a") == 1


async def test_wrong_dimension_in_cache_is_a_miss(cache: EmbeddingCache) -> None:
    cache.put_many("counting", [(text_key("t"), np.ones(3, dtype=np.float32))])
    inner = CountingEmbedder()
    out = await CachedEmbedder(inner, cache).embed(["t"])
    assert out.shape == (1, 16)
    assert inner.calls == [["t"]]


async def test_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "emb.db"
    inner = CountingEmbedder()
    with EmbeddingCache(path) as cache:
        before = await CachedEmbedder(inner, cache).embed(["x", "y"])
    fresh = CountingEmbedder()
    with EmbeddingCache(path) as cache:
        after = await CachedEmbedder(fresh, cache).embed(["y", "x"])
    assert fresh.calls == []
    np.testing.assert_array_equal(after, before[::-1])


async def test_many_keys_and_concurrent_callers(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "emb.db")
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, cache)
    texts = [f"t{i}" for i in range(1200)]  # more than one SELECT chunk
    await asyncio.gather(cached.embed(texts[:700]), cached.embed(texts[500:]))
    assert cache.count() == 1200
    calls = len(inner.calls)
    out = await cached.embed(texts)
    assert len(inner.calls) == calls
    np.testing.assert_array_equal(out, await inner._inner.embed(texts))


def test_text_key() -> None:
    assert text_key("a") != text_key("b")
    assert len(text_key("")) == 32
    assert text_key("\ud800") != text_key("")  # lone surrogates do not raise


async def test_cached_embedder_mirrors_the_inner_identity() -> None:
    inner = CountingEmbedder("n", 16)
    cached = CachedEmbedder(inner, EmbeddingCache())
    assert (cached.name, cached.dim, cached.max_tokens) == ("n", 16, 100)
    assert cached.count_tokens("two words") == 2
    assert (await cached.embed([])).shape == (0, 16)
    assert inner.calls == []


def test_a_broken_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "emb.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="embedding cache"):
        EmbeddingCache(path)


def test_sqlite_errors_are_translated(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "emb.db")
    cache._db.execute("DROP TABLE embeddings")
    with pytest.raises(StoreError):
        cache.get_many("m", [text_key("x")])
    with pytest.raises(StoreError):
        cache.put_many("m", [(text_key("x"), np.ones(2))])
    cache.close()
