"""Token counting: a real tokenizer and a whitespace stand-in for the port the chunker uses.

The port (:class:`~bastion.core.text.TokenCounter`, re-exported here) has two primitives,
``special_tokens`` and ``tokenize_batch`` (each token's start offset and word number);
``count``, ``count_batch`` and ``tokenize`` are derived on :class:`BaseTokenCounter`. Counts
include the special tokens the model adds around each input (``[CLS]`` and ``[SEP]`` for
all-MiniLM-L6-v2), so a cap of 256 is the model's whole window. Fitting windows of a text
are :func:`~bastion.knowledge.chunking.chunker.token_spans`: the chunker's ``token``
strategy, which this module does not import (the chunker imports it).
"""

from __future__ import annotations

import functools
import operator
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from bastion.core.errors import ConfigurationError
from bastion.core.text import TokenCounter, Tokens
from bastion.knowledge.chunking.wordpiece import AsciiWordPiece

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "BaseTokenCounter",
    "HuggingFaceTokenCounter",
    "TokenCounter",
    "Tokens",
    "WhitespaceTokenCounter",
    "minilm_token_counter",
]

TOKENIZER_FILE = "minilm_tokenizer.json"


class BaseTokenCounter(ABC):
    """Implements the derived operations from ``tokenize_batch``."""

    @property
    @abstractmethod
    def special_tokens(self) -> int: ...

    @abstractmethod
    def tokenize_batch(self, texts: Sequence[str]) -> list[Tokens]: ...

    def tokenize(self, text: str) -> Tokens:
        return self.tokenize_batch([text])[0]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(tokens) + self.special_tokens for tokens in self.tokenize_batch(texts)]

    def count(self, text: str) -> int:
        return self.count_batch([text])[0]


_NON_SPACE = re.compile(r"\S+")


class WhitespaceTokenCounter(BaseTokenCounter):
    """One token per run of non-whitespace characters: cheap and predictable, for tests."""

    def __init__(self, special_tokens: int = 0) -> None:
        if special_tokens < 0:
            raise ConfigurationError("special_tokens must not be negative")
        self._special = special_tokens

    @property
    def special_tokens(self) -> int:
        return self._special

    def tokenize_batch(self, texts: Sequence[str]) -> list[Tokens]:
        result = []
        for text in texts:
            starts = [m.start() for m in _NON_SPACE.finditer(text)]
            result.append(Tokens(starts, range(len(starts))))
        return result

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(text.split()) + self._special for text in texts]


class HuggingFaceTokenCounter(BaseTokenCounter):
    """Counts with a Hugging Face ``tokenizers`` tokenizer, exactly as the model will see text.

    Truncation and padding are switched off (the packaged ``tokenizer.json`` of
    all-MiniLM-L6-v2 truncates and pads to 128), so counts are true lengths.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._special = len(tokenizer.encode("", add_special_tokens=True).ids)
        self._fast = AsciiWordPiece.of(tokenizer)

    @classmethod
    def from_file(cls, path: str | Path) -> HuggingFaceTokenCounter:
        """Load a ``tokenizer.json`` from disk (never from a hub)."""
        from tokenizers import Tokenizer

        try:
            return cls(Tokenizer.from_file(str(path)))
        except Exception as exc:
            raise ConfigurationError(f"cannot load tokenizer from {path}: {exc}") from exc

    @property
    def special_tokens(self) -> int:
        return self._special

    def tokenize_batch(self, texts: Sequence[str]) -> list[Tokens]:
        fast = self._fast
        if fast is None:
            return self.tokenize_slow(texts)
        plans = [fast.plan(text) for text in texts]
        plain: list[str] = []  # what the fast path takes: whole texts, or runs of them
        rest: list[str] = []  # what the tokenizer takes: whole texts, or runs of them
        for text, plan in zip(texts, plans, strict=True):
            if plan is None:
                rest.append(text)
            else:
                for a, b, is_plain in plan:
                    (plain if is_plain else rest).append(text[a:b])
        quick = iter(fast.tokenize_many(plain))
        slow = iter(self.tokenize_slow(rest) if rest else ())
        out: list[Tokens] = []
        for plan in plans:
            if plan is None:
                out.append(next(slow))
            elif len(plan) == 1 and plan[0][2]:
                out.append(next(quick))
            else:
                starts: list[int] = []
                words: list[int] = []
                base = 0
                for a, _, is_plain in plan:
                    part = next(quick) if is_plain else next(slow)
                    starts += map(a.__add__, part.starts)
                    words += map(base.__add__, part.words)
                    if len(part.words):
                        base += part.words[-1] + 1
                out.append(Tokens(starts, words))
        return out

    def tokenize_slow(self, texts: Sequence[str]) -> list[Tokens]:
        """:meth:`tokenize_batch` by the tokenizer itself, never the ASCII fast path (the
        reference the fast path is tested against)."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        first = operator.itemgetter(0)
        return [
            Tokens(list(map(first, enc.offsets)), [w or 0 for w in enc.word_ids])
            for enc in encodings
        ]


def minilm_tokenizer_path() -> Path:
    """all-MiniLM-L6-v2's ``tokenizer.json``, shipped with Bastion (466 KB, Apache-2.0, the same
    bytes as in the packaged model): chunk sizes are counted in the local model's tokens even
    where the model itself (the ``local-embeddings`` extra) is not installed."""
    return Path(str(resources.files(__package__).joinpath(TOKENIZER_FILE)))


@functools.cache
def minilm_token_counter() -> HuggingFaceTokenCounter:
    """The default counter: all-MiniLM-L6-v2's tokenizer from its package, loaded once."""
    return HuggingFaceTokenCounter.from_file(minilm_tokenizer_path())
