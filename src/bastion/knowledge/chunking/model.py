"""The records of chunking: strategy, configuration, headings in, chunks out."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bastion.core.errors import ConfigurationError

__all__ = ["Chunk", "ChunkingConfig", "HeadingLike", "Strategy"]


class Strategy(StrEnum):
    """Where chunks may end. Every strategy packs units greedily up to the token cap."""

    SECTION = "section"
    """Prefer heading boundaries (higher levels first), then paragraphs, lines, sentences."""
    PARAGRAPH = "paragraph"
    """Prefer paragraph boundaries, then lines, sentences; headings count as paragraphs."""
    SENTENCE = "sentence"
    """Any sentence boundary; fill each chunk as far as the cap allows."""
    TOKEN = "token"  # noqa: S105 (not a password)
    """Fixed windows of tokens, blind to structure; exact overlap."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkingConfig:
    """How to chunk. Token numbers count what the embedding model sees, special tokens included."""

    strategy: Strategy = Strategy.SECTION
    max_tokens: int = 256
    """The cap: no chunk's ``token_count`` exceeds it (256 is all-MiniLM-L6-v2's window)."""
    overlap: float = 0.10
    """Fraction of the cap that consecutive chunks share: exact for ``token``; for the others
    the trailing whole sentences of a chunk that fit in this budget open the next chunk."""
    min_tokens: int | None = None
    """Chunks smaller than this are avoided where a cut allows; ``None`` means a quarter of
    ``max_tokens``. A last chunk below it is merged into its neighbour when both fit the cap."""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "strategy", Strategy(self.strategy))
        except ValueError:
            choices = ", ".join(s.value for s in Strategy)
            raise ConfigurationError(
                f"unknown chunking strategy {self.strategy!r}; choose one of {choices}"
            ) from None
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool):
            raise ConfigurationError("ChunkingConfig.max_tokens must be an integer")
        if self.max_tokens < 1:
            raise ConfigurationError("ChunkingConfig.max_tokens must be at least 1")
        if not math.isfinite(self.overlap) or not 0.0 <= self.overlap < 1.0:
            raise ConfigurationError("ChunkingConfig.overlap must be in [0, 1)")
        if self.min_tokens is not None and not 0 <= self.min_tokens <= self.max_tokens:
            raise ConfigurationError("ChunkingConfig.min_tokens must be in [0, max_tokens]")

    @property
    def min_size(self) -> int:
        """``min_tokens``, with its default resolved."""
        return self.max_tokens // 4 if self.min_tokens is None else self.min_tokens


class HeadingLike(Protocol):
    """A heading a parser found (``bastion.knowledge.ingest`` ``Heading`` fits)."""

    @property
    def level(self) -> int:
        """1 for a top-level heading, up to 6."""
        ...

    @property
    def text(self) -> str:
        """The heading's title, without markers."""
        ...

    @property
    def line(self) -> int:
        """1-based line of the heading in the document text."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    """A piece of one document: an exact slice of its text, with where it came from."""

    chunk_id: str
    """Hex digest of doc id, sequence number, character span and text: stable across runs."""
    doc_id: str
    seq: int
    """0-based position of the chunk in its document."""
    text: str
    """``document_text[char_start:char_end]``; never starts or ends with whitespace."""
    start_line: int
    """1-based line (lines end at ``\\n``) of the chunk's first character."""
    end_line: int
    """1-based line of the chunk's last character (inclusive)."""
    char_start: int
    char_end: int
    """End of the slice (exclusive)."""
    section: str
    """Heading path shared by the chunk's content (``"Setup > Install"``), or ``""``."""
    token_count: int
    """Tokens the embedding model sees for ``text``, special tokens included."""
