"""Embedders: the port (:class:`Embedder`) and its adapters.

* :class:`LocalEmbedder` — the packaged all-MiniLM-L6-v2, offline: ONNX Runtime on CPU (int8
  by default); on CUDA fp16 through ``onnxruntime-gpu`` or, without it, PyTorch.
* :class:`HttpEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint.
* :class:`HashingEmbedder` — deterministic feature hashing, for unit tests only.
* :class:`CachedEmbedder` + :class:`EmbeddingCache` — never embed the same text twice.

``LocalEmbedder`` and ``HttpEmbedder`` are imported on first access, so importing this package
does not load ONNX Runtime or httpx; torch is imported only when the PyTorch engine is chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.knowledge.embedders.base import Embedder, Vectors, l2_normalize
from bastion.knowledge.embedders.cache import CachedEmbedder, EmbeddingCache, text_key
from bastion.knowledge.embedders.errors import (
    EmbeddingError,
    EmbeddingRequestError,
    EmbeddingResponseError,
    EmbeddingUnavailableError,
)
from bastion.knowledge.embedders.hashing import HashingEmbedder

if TYPE_CHECKING:
    from bastion.knowledge.embedders.http import HttpEmbedder
    from bastion.knowledge.embedders.local import LocalEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingRequestError",
    "EmbeddingResponseError",
    "EmbeddingUnavailableError",
    "HashingEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "Vectors",
    "l2_normalize",
    "text_key",
]

_LAZY = {
    "HttpEmbedder": "bastion.knowledge.embedders.http",
    "LocalEmbedder": "bastion.knowledge.embedders.local",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
