"""Text folding for pattern matching: match what a reader (or a model) sees, not the bytes.

Attackers dodge keyword rules with fullwidth or mathematical letters, zero-width characters
inside words, Cyrillic look-alikes, leetspeak, Markdown emphasis and spaced-out letters. The
detectors match against folded copies of the text, built in stages:

* :func:`fold` — NFKC, invisible characters removed, common look-alikes mapped to Latin,
  case-folded, runs of spaces and tabs collapsed (newlines kept, for line-anchored markup).
* :func:`words` — :func:`fold`, then digits read as letters (``1gn0re a11`` → ``ignore all``:
  a doubled 1 reads as ``ll``, a single one as ``i``), Markdown emphasis removed, spaced-out
  letters joined (``i g n o r e`` → ``ignore``).
* :func:`plain` — :func:`words` reduced to lowercase words separated by single spaces.

The folded copies are for matching only; offsets into them mean nothing in the original. The
last few results are cached, since the injection and toxicity checks fold the same text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "BIDI_CONTROLS",
    "fold",
    "plain",
    "strip_invisible",
    "tag_payload",
    "words",
]

_INVISIBLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
"""Characters that render as nothing: zero-width spaces and joiners, soft hyphen, bidi
controls, word joiners, Hangul fillers, variation selectors, Unicode tag characters."""

_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
_TAGS = re.compile("[\U000e0020-\U000e007e]{1,4096}")

BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""Embeddings, overrides and isolates: they reorder what is displayed (Trojan Source)."""

_CONFUSABLES = str.maketrans(
    # Cyrillic and Greek look-alikes (after case folding), Latin small capitals and dotless i,
    # typographic quotes: written as escapes so the source shows what each one is.
    (
        "\u0430\u0432\u0435\u0451\u0456\u0457\u0458\u043a\u043c\u043d\u043e\u0440"
        "\u0441\u0442\u0443\u0445\u0455\u0501\u04bb\u04cf\u051b\u051d\u03b1\u03b5"
        "\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7\u0131\u0261\u0280\u1d00"
        "\u1d07\u026a\u1d0f\u2018\u2019\u02bc"
    ),
    ("abeeiijkmhopctyxsdhlqwaeikvoptuxigraeio'''"),
)

_LEET = str.maketrans("013457", "oieast")
_HSPACE = re.compile(r"[^\S\n]{2,}|[^\S\n ]")
_SPACED_LETTERS = re.compile(r"[a-z](?<![a-z0-9'][a-z])(?:[ .\-][a-z](?![a-z])){3,64}")
_NOT_WORD = re.compile(r"[^a-z0-9' ]+")
_SPACES = re.compile(r" {2,}")


def strip_invisible(text: str) -> str:
    """``text`` without any character that renders as nothing."""
    return text if text.isascii() else _INVISIBLE.sub("", text)


def tag_payload(text: str) -> str:
    """The ASCII hidden in Unicode tag characters ("ASCII smuggling"), or ``""``."""
    if text.isascii():
        return ""
    return " ".join(
        "".join(chr(ord(c) - 0xE0000) for c in run.group()) for run in _TAGS.finditer(text)
    )


def _join_spaced(match: re.Match[str]) -> str:
    return match.group()[::2]


@lru_cache(maxsize=4)
def fold(text: str) -> str:
    """NFKC, invisible characters removed, look-alikes mapped, case-folded, spaces collapsed."""
    if not text.isascii():
        text = strip_invisible(unicodedata.normalize("NFKC", text))
        text = text.casefold().translate(_CONFUSABLES)
    else:
        text = text.lower()
    return _HSPACE.sub(" ", text)


@lru_cache(maxsize=4)
def words(text: str) -> str:
    """:func:`fold`, then leetspeak read as letters, emphasis dropped, spaced letters joined."""
    text = fold(text).replace("11", "ll").translate(_LEET)  # "a11" is "all", "1f" is "if"
    text = text.replace("*", "").replace("`", "").replace("~", "").replace("_", " ")
    text = _SPACED_LETTERS.sub(_join_spaced, text)
    return _HSPACE.sub(" ", text)


@lru_cache(maxsize=4)
def plain(text: str) -> str:
    """:func:`words` as lowercase words (letters, digits, apostrophes) and single spaces."""
    text = words(text).replace("@", "a").replace("$", "s")
    return _SPACES.sub(" ", _NOT_WORD.sub(" ", text)).strip()
