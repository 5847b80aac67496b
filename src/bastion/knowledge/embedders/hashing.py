"""A deterministic embedder for unit tests: feature hashing, no model, no I/O.

**Not for retrieval quality.** It maps word unigrams, word bigrams and character trigrams to
signed buckets of a fixed-size vector (the "hashing trick") and L2-normalizes the result, so
texts that share words are closer than texts that do not, and the same text always gives the
same vector, in every process and on every machine (``blake2b``, not Python's salted
``hash``). Use it wherever a test needs *an* embedder; use :class:`LocalEmbedder` or
:class:`HttpEmbedder` for real search.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator, Sequence

import numpy as np

from bastion.knowledge.embedders.base import Embedder, Vectors, l2_normalize

__all__ = ["HashingEmbedder"]

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


def _features(text: str) -> Iterator[tuple[str, float]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        yield "<empty>", 1.0
        return
    for word in words:
        yield "w:" + word, 1.0
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            yield "c:" + padded[i : i + 3], 0.3
    for a, b in itertools.pairwise(words):
        yield f"b:{a} {b}", 0.5


class HashingEmbedder(Embedder):
    """Feature-hashing embedder (deterministic, fast, meaningless beyond word overlap)."""

    def __init__(self, dim: int = 256, *, max_tokens: int = 512) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.max_tokens = max_tokens
        self.name = f"bastion/hashing-{dim}"

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Blocking form of :meth:`embed`."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self.dim] += sign * weight
        return l2_normalize(out)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return self.encode(texts)

    def count_tokens(self, text: str) -> int:
        """Words and punctuation marks (this embedder adds no special tokens)."""
        return len(_TOKEN.findall(text))
