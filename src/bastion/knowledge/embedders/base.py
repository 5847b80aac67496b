"""The embedder port: texts in, unit-length float32 vectors out.

An embedder implements four things: ``name``, ``dim``, ``max_tokens`` (attributes) and
:meth:`Embedder.embed` plus :meth:`Embedder.count_tokens`. The rest is derived here.

Why ``embed`` is async: Bastion's real API is async, and the two kinds of embedder both fit it
without blocking the event loop. An HTTP embedder waits on the network (native ``await``); the
local model computes in ONNX Runtime, which releases the GIL, so it runs in a worker thread
(``asyncio.to_thread``) and also offers its plain blocking ``encode`` for scripts. Nothing is
written twice.

Contract (checked by ``tests/knowledge/test_embedders.py`` for every embedder):

* ``embed(texts)`` returns a C-contiguous ``float32`` array of shape ``(len(texts), dim)``,
  one row per text in input order, each row of L2 norm 1. An empty input gives ``(0, dim)``.
* The same text embeds to the same vector (to float tolerance) on every call.
* ``name`` identifies the model *and* its variant (``fp32``, ``int8``...); two embedders
  whose vectors may differ never share a name, since caches key on it. A name ending in a
  number format (``model:int8``, ``model:bf16``, see :data:`NUMBER_FORMATS`) says that the
  vectors are the model's, computed in that format: variants of one model share a vector space
  (:func:`vector_space`), so an index holds vectors of several of them and any of them
  searches it.
* ``count_tokens(text)`` counts the tokens the model would see for the whole text, special
  tokens (``[CLS]``, ``[SEP]``) included, before any truncation; ``max_tokens`` is the model's
  window in the same units. A text with ``count_tokens(text) <= max_tokens`` is embedded
  whole; a longer one is truncated to the window, never refused. This is the chunker's
  convention too (``ChunkingConfig.max_tokens`` counts special tokens).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["NUMBER_FORMATS", "Embedder", "Vectors", "l2_normalize", "same_space", "vector_space"]

Vectors = npt.NDArray[np.float32]
"""A ``(n, dim)`` float32 array of L2-normalized rows."""


NUMBER_FORMATS = ("fp32", "int8", "fp16", "bf16")
"""Name suffixes (``:fp32``...) that mark one model computed in another number format (the
local model's variants, in the order its options list them)."""


def vector_space(name: str) -> str:
    """The space an embedder's vectors live in: its name without a trailing ``:<format>`` of
    :data:`NUMBER_FORMATS`, else the whole name.

    ``all-MiniLM-L6-v2:int8`` and ``all-MiniLM-L6-v2:bf16`` are one model in two number
    formats: their vectors agree to cosine >= 0.99 and retrieval across them scores as within
    one (``bench/embed_scifact.py``'s mixed-variant table), so an index built with one is
    searched and extended with the other. Indexes compare embedders by this, caches by name.
    """
    model, sep, fmt = name.rpartition(":")
    return model if sep and model and fmt in NUMBER_FORMATS else name


def same_space(built_with: str | None, now: str | None) -> bool:
    """Whether two embedders (names; ``None``: none) are variants of one model: an index
    built with ``built_with`` takes ``now``'s vectors and keeps the name it was built with."""
    if not built_with or not now:
        return False
    return vector_space(built_with) == vector_space(now)


def l2_normalize(x: npt.ArrayLike, *, eps: float = 1e-12) -> Vectors:
    """Rows scaled to unit L2 norm (rows of zeros stay zero), as float32."""
    arr = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    return np.ascontiguousarray(arr / np.maximum(norms, eps), dtype=np.float32)


class Embedder(ABC):
    """Turns texts into vectors. Implement ``embed`` and ``count_tokens``; set the attributes."""

    name: str
    """Model id including its variant, e.g. ``sentence-transformers/all-MiniLM-L6-v2:int8``."""
    dim: int
    """Length of each vector."""
    max_tokens: int
    """The model's window: most tokens (special tokens included) embedded without truncation."""

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, in input order."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for the whole of ``text``, special tokens included."""

    # -- derived -----------------------------------------------------------------------------

    async def embed_one(self, text: str) -> Vectors:
        """The vector of one text, shape ``(dim,)``."""
        vectors = await self.embed([text])
        row: Vectors = vectors[0]
        return row

    def fits(self, text: str) -> bool:
        """Whether ``text`` is embedded whole (not truncated)."""
        return self.count_tokens(text) <= self.max_tokens

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"
