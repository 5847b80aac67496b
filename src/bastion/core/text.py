"""Text ports: what chunking and governed answers need from a tokenizer.

Both ``bastion.knowledge`` (which implements them) and ``bastion.governance`` (whose answer
workflow counts context tokens) use these, and neither may import the other, so the ports live
here, in the core, like the store port.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["RELEVANCE_FLOOR", "TokenCounter", "Tokens"]

RELEVANCE_FLOOR = 0.791
"""The evidence score a sentence must reach (``bastion.governance.answer.evidence``; chosen on
the answer evaluation set's dev split, ``bench/answer_eval.py``) for its chunk to enter an
answer's context: the default of the answer workflow
(``bastion.governance.answer.relevance``) and of ``Workspace.ask``, which may not import each
other's layer, so it lives here."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """The content tokens of one text (no special tokens), in order."""

    starts: Sequence[int]
    """Character offset where each token starts."""
    words: Sequence[int]
    """Word number of each token: cutting between two tokens of one word is not clean, since
    the halves may tokenize differently on their own."""

    def __len__(self) -> int:
        return len(self.starts)


@runtime_checkable
class TokenCounter(Protocol):
    """What the chunker and the context budget need from a tokenizer."""

    @property
    def special_tokens(self) -> int:
        """Tokens the model adds to every input (``[CLS]``/``[SEP]``: 2)."""
        ...

    def tokenize_batch(self, texts: Sequence[str]) -> list[Tokens]:
        """Content tokens of each text, with character offsets."""
        ...

    def count(self, text: str) -> int:
        """Tokens the model sees for ``text``, special tokens included."""
        ...

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` of each text."""
        ...
