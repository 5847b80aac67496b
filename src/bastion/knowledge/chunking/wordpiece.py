"""BERT WordPiece on plain ASCII text, with each distinct word split once.

A Hugging Face tokenizer of the BERT family (``BertNormalizer`` lower-casing,
``BertPreTokenizer``, a ``WordPiece`` model: all-MiniLM-L6-v2's) gives printable ASCII text
a simple shape: the normalizer only lower-cases it (offsets unchanged), the pre-tokenizer makes
a word of each run of letters and digits and of each punctuation character, and WordPiece splits
each word greedily, longest known piece first. The splits of a word never depend on its
neighbours, so :class:`AsciiWordPiece` keeps each distinct word's split and walks the text once.
That costs much less CPU time than the tokenizer's own ``encode_batch`` with offsets, which
builds a tuple per token (``docs/benchmarks.md``); a batch of texts
is walked as one (:meth:`AsciiWordPiece.tokenize_many`), the per-token work in numpy.

Only texts :meth:`AsciiWordPiece.covers` are taken: printable ASCII with tabs and line breaks,
no text an added token (``[CLS]``, ``[MASK]``, ...) could match. Anything else goes to the real
tokenizer, and ``tests/knowledge/test_wordpiece.py`` checks both give the same tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from itertools import chain, pairwise, repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from bastion.core.text import Tokens

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["AsciiWordPiece"]

_RUN = re.compile(r"[a-z0-9]+")
"""BERT's pre-tokens in lower-cased ASCII are runs of letters and digits, and each punctuation
character alone (BERT counts every printable ASCII character that is not a letter, digit or
space as one: :data:`_PUNCT`)."""
_ALNUM = np.zeros(256, dtype=bool)
_ALNUM[[*b"abcdefghijklmnopqrstuvwxyz0123456789"]] = True
_PUNCT = np.zeros(256, dtype=bool)
_PUNCT[[c for c in range(0x21, 0x7F) if not chr(c).isalnum()]] = True
_OTHER = re.compile(r"[^\t\n\r -~]")
"""What the fast path does not handle: control characters (the normalizer drops them, joining
the words around them), anything outside ASCII (accents, CJK spacing, other punctuation)."""
_SPACES = " \t\n\r"
"""The ASCII characters BERT's pre-tokenizer splits at (the other ASCII whitespace characters
are control characters, which its normalizer drops)."""
_SPACE = re.compile(r"[ \t\n\r]")
_ONE = (0,)
"""The split of a word that is one token (one shared tuple)."""
_KEPT = 1 << 18
"""Distinct words whose splits are kept (then the memory starts again)."""
_I64 = npt.NDArray[np.int64]


class _Table:
    """Every distinct run of letters and digits seen, numbered from 1 (0 stands for a
    punctuation character: one token), with each number's token count and where its tokens
    start, as arrays a batch indexes at once."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.sizes = np.ones(1, np.int64)
        """Tokens of each number's word."""
        self.first = np.zeros(1, np.int64)
        """Where each number's token offsets begin in :attr:`offsets`."""
        self.offsets = np.zeros(1, np.int64)
        """Every word's token start offsets (in its word), word after word."""
        self._used = 1

    def look_up(self, runs: list[str], split: Callable[[str], tuple[int, ...]]) -> _I64:
        """The number of each run (a new one is split once, in order of first use)."""
        numbers = self.numbers
        found = np.fromiter(map(numbers.get, runs, repeat(-1)), np.int64, len(runs))
        missing = np.flatnonzero(found < 0)
        if len(missing):
            places = missing.tolist()
            new = list(dict.fromkeys([runs[n] for n in places]))
            self._add(new, [split(word) for word in new])
            found[missing] = [numbers[runs[n]] for n in places]
        return found

    def _add(self, words: list[str], splits: list[tuple[int, ...]]) -> None:
        start = len(self.sizes)
        sizes = np.fromiter(map(len, splits), np.int64, len(splits))
        flat = np.fromiter(chain.from_iterable(splits), np.int64, int(sizes.sum()))
        firsts = self._used + np.cumsum(sizes) - sizes
        self.sizes = np.concatenate([self.sizes, sizes])
        self.first = np.concatenate([self.first, firsts])
        if self._used + len(flat) > len(self.offsets):
            grown = np.zeros(max(2 * len(self.offsets), self._used + len(flat)), np.int64)
            grown[: self._used] = self.offsets[: self._used]
            self.offsets = grown
        self.offsets[self._used : self._used + len(flat)] = flat
        self._used += len(flat)
        self.numbers.update(zip(words, range(start, start + len(words)), strict=True))


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
        self._head = max((len(p) for p in vocab if not p.startswith(prefix)), default=0)
        """The longest piece that starts a word."""
        self._tail = max((len(p) - len(prefix) for p in vocab if p.startswith(prefix)), default=0)
        """The longest piece that continues one (its prefix not counted)."""
        self._longest = longest
        self._added = (
            re.compile("|".join(re.escape(t) for t in added), re.IGNORECASE) if added else None
        )
        self._table = _Table()

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
        return self.tokenize_many([text])[0]

    def tokenize_many(self, texts: Sequence[str]) -> list[Tokens]:
        """:meth:`tokenize` of each text, for texts :meth:`covers`, in one pass over all of
        them: the texts joined by spaces (which join no words) and lower-cased (ASCII keeps
        its offsets); where words start found by array arithmetic over the characters; the
        runs of letters and digits taken by one ``findall`` and each distinct one's split
        looked up (or made once; a punctuation character is always one token); token starts
        and word numbers as array arithmetic, then cut per text. No Python loop runs per word
        or per token, only per text and per new word."""
        if not texts:
            return []
        if len(self._table.numbers) > _KEPT:
            self._table = _Table()
        table = self._table
        joined = " ".join(texts).lower()
        chars = np.frombuffer(joined.encode("ascii"), np.uint8)
        alnum = _ALNUM[chars]
        first = _PUNCT[chars]  # a punctuation character is a word; so is a run's first
        first[1:] |= alnum[1:] & ~alnum[:-1]
        if len(chars):
            first[0] |= alnum[0]
        word_at = np.flatnonzero(first)  # each word's first character
        words = len(word_at)
        numbers = np.zeros(words, np.int64)
        numbers[alnum[word_at]] = table.look_up(_RUN.findall(joined), self._split)
        sizes = table.sizes[numbers]
        tokens = int(sizes.sum())
        if tokens == words:  # one token per word
            word_of = np.arange(words)
            starts = word_at
        else:
            word_of = np.repeat(np.arange(words), sizes)
            nth = np.arange(tokens) - (np.cumsum(sizes) - sizes)[word_of]  # in its word
            starts = word_at[word_of] + table.offsets[table.first[numbers[word_of]] + nth]
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
        bases = np.cumsum(lengths + 1) - lengths - 1  # where each text starts in the join
        first_token = np.searchsorted(starts, bases)
        first_word = np.searchsorted(word_at, bases)
        per_text = np.diff(first_token, append=tokens)
        local_starts = (starts - np.repeat(bases, per_text)).tolist()
        local_words = (word_of - np.repeat(first_word, per_text)).tolist()
        token_bounds = [*first_token.tolist(), tokens]
        word_bounds = [*first_word.tolist(), words]
        out: list[Tokens] = []
        for (lo, hi), (first, last) in zip(
            pairwise(token_bounds), pairwise(word_bounds), strict=True
        ):
            if last - first == hi - lo:  # one token per word: the common case
                out.append(Tokens(local_starts[lo:hi], range(hi - lo)))
            else:
                out.append(Tokens(local_starts[lo:hi], local_words[lo:hi]))
        return out

    def _split(self, word: str) -> tuple[int, ...]:
        """Where each WordPiece token of ``word`` starts; ``(0,)`` for the unknown token (a word
        too long or with no split, as WordPiece does)."""
        if len(word) > self._longest:
            return _ONE
        vocab, prefix = self._vocab, self._prefix
        starts: list[int] = []
        start = 0
        while start < len(word):  # no piece is longer than the vocabulary's longest
            end = min(len(word), start + (self._head if start == 0 else self._tail))
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
