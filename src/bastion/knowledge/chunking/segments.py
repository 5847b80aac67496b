"""Long texts in pieces: tokenized in pieces (exactly as whole), chunked in segments.

* :func:`tokenize` cuts a long text before single spaces into pieces of about
  ``PIECE_CHARS`` characters, tokenizes all pieces in one batch and stitches the tokens back
  (offsets and word numbers shifted). A tokenizer never joins characters across a space (BERT
  splits words at whitespace; byte-level BPE and SentencePiece start a token *with* the space,
  which stays at the head of its piece), so the tokens are those of the whole text; what
  changes is the cost: a tokenizer's time grows faster than linearly on one long string, and
  a batch of pieces runs on every core.
* :func:`segment_bounds` cuts a long document into segments of at most ``SEGMENT_CHARS``
  characters at paragraph breaks (else line breaks, else spaces); the chunker analyzes and
  packs one segment at a time (``Chunker.chunk_stream``), so the memory a document needs does
  not grow with its size. A chunk never spans two segments.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.core.text import TokenCounter, Tokens

__all__ = ["PIECE_CHARS", "SEGMENT_CHARS", "segment_bounds", "tokenize"]

PIECE_CHARS = 8 * 1024
"""Texts longer than twice this are tokenized in pieces of about this size."""
SEGMENT_CHARS = 256 * 1024
"""Longest segment of a document chunked as a stream."""


def _cuts(text: str, size: int) -> list[int]:
    """Positions of single spaces, about ``size`` apart, each between a non-space and an
    ASCII letter or digit (the first such space ``size`` or more after the cut before)."""
    cuts = [0]
    end = len(text) - 1
    while len(text) - cuts[-1] > 2 * size:
        at = text.find(" ", cuts[-1] + size, end)
        while at >= 0 and not (
            not text[at - 1].isspace() and text[at + 1].isascii() and text[at + 1].isalnum()
        ):
            at = text.find(" ", at + 1, end)
        if at < 0:
            break  # no clean cut left: the rest is one piece
        cuts.append(at)
    return cuts


def tokenize(counter: TokenCounter, texts: Sequence[str], piece: int = PIECE_CHARS) -> list[Tokens]:
    """``counter.tokenize_batch(texts)``, long texts tokenized in pieces (same tokens)."""
    if all(len(text) <= 2 * piece for text in texts):
        return counter.tokenize_batch(texts)
    pieces: list[str] = []
    plan: list[list[int]] = []
    for text in texts:
        cuts = _cuts(text, piece) if len(text) > 2 * piece else [0]
        plan.append(cuts)
        ends = [*cuts[1:], len(text)]
        pieces.extend(text[a:b] for a, b in zip(cuts, ends, strict=True))
    tokenized = counter.tokenize_batch(pieces)
    out: list[Tokens] = []
    at = 0
    for cuts in plan:
        if len(cuts) == 1:
            out.append(tokenized[at])
            at += 1
            continue
        starts: list[int] = []
        words: list[int] = []
        word_base = 0
        for offset in cuts:
            part = tokenized[at]
            at += 1
            starts.extend(map(offset.__add__, part.starts))
            words.extend(map(word_base.__add__, part.words))
            if words:
                word_base = words[-1] + 1
        out.append(Tokens(starts, words))
    return out


def segment_bounds(text: str, size: int = SEGMENT_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive segments covering ``text``, each at most ``size``
    characters, cut after a blank line where one lies in the second half of the segment,
    else after a line break, else after a space, else at ``size``."""
    bounds: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > size:
        limit = start + size
        half = start + size // 2
        cut = text.rfind("\n\n", half, limit)
        cut = cut + 2 if cut >= 0 else text.rfind("\n", half, limit) + 1
        if cut <= half:
            cut = text.rfind(" ", half, limit) + 1
        if cut <= half:
            cut = limit
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(text)))
    return bounds
