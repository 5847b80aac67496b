"""Chunking: a document's cleaned text becomes token-capped chunks that point back to its lines.

Four strategies (``section``, ``paragraph``, ``sentence``, ``token``) share one packer: units are
packed up to ``max_tokens`` (counted as the embedding model counts, special tokens included),
cuts prefer the strategy's boundaries, consecutive chunks overlap by about ``overlap`` of the
cap, and every chunk is an exact slice of the text with a stable id, a line range and the
heading path it sits under. Pure functions; the only dependency is the tokenizer. See
``docs/chunking.md``.
"""

from bastion.knowledge.chunking.chunker import Chunker, chunk_id, chunk_text, token_spans
from bastion.knowledge.chunking.invariants import violations
from bastion.knowledge.chunking.model import Chunk, ChunkingConfig, HeadingLike, Strategy
from bastion.knowledge.chunking.tokens import (
    BaseTokenCounter,
    HuggingFaceTokenCounter,
    TokenCounter,
    Tokens,
    WhitespaceTokenCounter,
    minilm_token_counter,
)

__all__ = [
    "BaseTokenCounter",
    "Chunk",
    "Chunker",
    "ChunkingConfig",
    "HeadingLike",
    "HuggingFaceTokenCounter",
    "Strategy",
    "TokenCounter",
    "Tokens",
    "WhitespaceTokenCounter",
    "chunk_id",
    "chunk_text",
    "minilm_token_counter",
    "token_spans",
    "violations",
]
