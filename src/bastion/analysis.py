"""Text analysis for keyword search: lower-case word tokens, English stop words removed,
Snowball-stemmed (PyStemmer, a C extension). The same analyzer runs on documents and queries.

Keyword search (``bastion.knowledge.index``, which re-exports this module's names from
``knowledge.index.analysis``) and the answer's overlap checks (``bastion.governance.answer``)
both use it, and neither part may import the other, so it sits one layer below them and
imports only PyStemmer (``docs/architecture.md``).

The stop-word list is the one bm25s ships as ``"en"`` (the English list of scikit-learn's
predecessor, 33 words); measured on SciFact it keeps nDCG@10 at the level bm25s reports.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no stubs

__all__ = ["ENGLISH_STOPWORDS", "Analyzer"]

_ENGLISH = (
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with"
)
ENGLISH_STOPWORDS = frozenset(_ENGLISH.split())

_WORD = re.compile(r"\w\w+")
"""A word: two or more word characters. ``findall`` takes each run of word characters whole
from its start, so this finds exactly scikit-learn's ``\\b\\w\\w+\\b`` (bm25s's pattern) without
testing the boundaries (a third less time)."""
_ASCII_WORD = re.compile(r"\w\w+", re.ASCII)
"""The same for ASCII text (where ``\\w`` means the same either way), a fifth faster again."""


class Analyzer:
    """``analyze(text) -> list of terms``; repeated terms are kept (term frequency counts)."""

    def __init__(
        self, *, language: str = "english", stopwords: frozenset[str] = ENGLISH_STOPWORDS
    ) -> None:
        self.language = language
        self.stopwords = stopwords
        self._stemmer = Stemmer.Stemmer(language)
        self._stem = lru_cache(maxsize=200_000)(self._stemmer.stemWord)

    def analyze(self, text: str) -> list[str]:
        stop = self.stopwords
        stem = self._stem
        return [stem(w) for w in self.words(text) if w not in stop]

    def words(self, text: str) -> list[str]:
        """The words of ``text`` before stop words and stemming (``analyze`` is ``term`` of
        each, the ``None`` ones left out): a caller that sees the same words again and again
        can remember ``term`` per distinct word."""
        if text.isascii():  # NFKC leaves ASCII as it is
            return _ASCII_WORD.findall(text.lower())
        return _WORD.findall(unicodedata.normalize("NFKC", text).lower())

    def term(self, word: str) -> str | None:
        """The term of one word of :meth:`words`; ``None`` for a stop word."""
        # uncached: a caller of ``term`` remembers each distinct word itself
        return None if word in self.stopwords else self._stemmer.stemWord(word)

    @property
    def name(self) -> str:
        """Identifies the analysis (an index built with one analyzer needs the same one)."""
        return f"words-{self.language}-stop{len(self.stopwords)}"
