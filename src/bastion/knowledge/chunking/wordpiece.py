"""BERT WordPiece on plain ASCII text, with each distinct word split once.

A Hugging Face tokenizer of the BERT family (``BertNormalizer`` lower-casing,
``BertPreTokenizer``, a ``WordPiece`` model: all-MiniLM-L6-v2's) gives printable ASCII text
a simple shape: the normalizer only lower-cases it (offsets unchanged), the pre-tokenizer makes
a word of each run of letters and digits and of each punctuation character, and WordPiece splits
each word greedily, longest known piece first. The splits of a word never depend on its
neighbours, so :class:`AsciiWordPiece` keeps each distinct word's split and walks the text once.
Measured on text of 1 MiB (``docs/benchmarks.md``), that is about a fifth of the CPU time of the
tokenizer's own ``encode_batch`` with offsets, which builds a tuple per token.

Only texts :meth:`AsciiWordPiece.covers` are taken: printable ASCII with tabs and line breaks,
no text an added token (``[CLS]``, ``[MASK]``, ...) could match. Anything else goes to the real
tokenizer, and ``tests/knowledge/test_wordpiece.py`` checks both give the same tokens.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from bastion.core.text import Tokens

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["AsciiWordPiece"]

_WORD = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
"""BERT's pre-tokens in ASCII: runs of letters and digits; each punctuation character alone
(BERT counts every printable ASCII character that is not a letter, digit or space as one)."""
_OTHER = re.compile(r"[^\t\n\r -~]")
"""What the fast path does not handle: control characters (the normalizer drops them, joining
the words around them), anything outside ASCII (accents, CJK spacing, other punctuation)."""
_SPACES = " \t\n\r"
"""The ASCII characters BERT's pre-tokenizer splits at (the other ASCII whitespace characters
are control characters, which its normalizer drops)."""
_SPACE = re.compile(r"[ \t\n\r]")
_ONE = (0,)
"""The split of a word that is one token (shared: the common case is found by identity)."""
_KEPT = 1 << 18
"""Distinct words whose splits are kept (then the memory starts again)."""


class AsciiWordPiece:
    """The fast path for one tokenizer; :meth:`of` returns ``None`` for another kind."""

    def __init__(
        self,
        vocab: set[str],
        *,
        prefix: str,
        longest: int,
        added: list[str],
    ) -> None:
        self._vocab = vocab
        self._prefix = prefix
        self._longest = longest
        self._added = (
            re.compile("|".join(re.escape(t) for t in added), re.IGNORECASE) if added else None
        )
        self._splits: dict[str, tuple[int, ...]] = {}

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> AsciiWordPiece | None:
        """The fast path for ``tokenizer`` when its configuration is BERT's, else ``None``."""
        config: dict[str, Any] = json.loads(tokenizer.to_str())
        normalizer = config.get("normalizer") or {}
        model = config.get("model") or {}
        bert = (
            normalizer.get("type") == "BertNormalizer"
            and normalizer.get("lowercase") is True
            and normalizer.get("clean_text") is True
            and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
            and model.get("type") == "WordPiece"
            and isinstance(model.get("vocab"), dict)
            and isinstance(model.get("continuing_subword_prefix"), str)
            and isinstance(model.get("max_input_chars_per_word"), int)
        )
        if not bert:
            return None
        return cls(
            set(model["vocab"]),
            prefix=model["continuing_subword_prefix"],
            longest=model["max_input_chars_per_word"],
            added=[str(t["content"]) for t in config.get("added_tokens", ()) if t.get("content")],
        )

    def covers(self, text: str) -> bool:
        """Whether :meth:`tokenize` gives exactly the tokenizer's tokens for ``text``."""
        if not text.isascii() or _OTHER.search(text):
            return False
        return self._added is None or self._added.search(text) is None

    def plan(self, text: str) -> list[tuple[int, int, bool]] | None:
        """``text`` cut into runs for :meth:`tokenize` (``True``) and for the tokenizer
        (``False``: each run of non-space characters holding one :meth:`covers` refuses), in
        order; ``None`` when the tokenizer should take all of it (an added token's name in it,
        or mostly such runs). The pre-tokenizer always splits at ASCII spaces, tabs and line
        breaks, and nothing joins across them, so the runs tokenize alone as they do in the
        whole text: a text with a few accents or typographic quotes keeps the fast path."""
        if self._added is not None and self._added.search(text):
            return None
        if text.isascii() and not _OTHER.search(text):
            return [(0, len(text), True)]
        parts: list[tuple[int, int, bool]] = []
        done = odd = 0
        for found in _OTHER.finditer(text):
            at = found.start()
            if at < done:
                continue  # inside the run just taken
            start = max(done, *(text.rfind(space, done, at) + 1 for space in _SPACES))
            after = _SPACE.search(text, at)
            end = len(text) if after is None else after.start()
            if start > done:
                parts.append((done, start, True))
            parts.append((start, end, False))
            odd += end - start
            done = end
        if done < len(text):
            parts.append((done, len(text), True))
        return None if 2 * odd > len(text) else parts

    def tokenize(self, text: str) -> Tokens:
        """Each token's start and word number, for a text :meth:`covers`."""
        splits = self._splits
        if len(splits) > _KEPT:
            splits.clear()
        found = _WORD.findall(text)
        at = [match.start() for match in _WORD.finditer(text)]
        pieces = list(map(splits.get, found))
        if None in pieces:
            for n, split in enumerate(pieces):
                if split is None:
                    word = found[n]
                    pieces[n] = splits[word] = self._split(word.lower())
        several = [n for n, split in enumerate(pieces) if split is not _ONE]
        if not several:  # one token per word: the common case, no loop in Python
            return Tokens(at, range(len(at)))
        starts: list[int] = []
        words: list[int] = []
        done = 0
        for n in several:
            starts += at[done:n]
            words += range(done, n)
            split = pieces[n]
            assert split is not None
            starts += [at[n] + offset for offset in split]
            words += [n] * len(split)
            done = n + 1
        starts += at[done:]
        words += range(done, len(at))
        return Tokens(starts, words)

    def _split(self, word: str) -> tuple[int, ...]:
        """Where each WordPiece token of ``word`` starts; ``(0,)`` for the unknown token (a word
        too long or with no split, as WordPiece does)."""
        if len(word) > self._longest:
            return _ONE
        vocab, prefix = self._vocab, self._prefix
        starts: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else prefix + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            if end == start:
                return _ONE
            starts.append(start)
            start = end
        return _ONE if len(starts) == 1 else tuple(starts)
