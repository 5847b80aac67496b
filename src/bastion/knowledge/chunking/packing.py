"""Packing: choose cuts among ranked boundaries so chunks fit the cap. Pure list arithmetic.

The document is a row of boundaries ``0..m``; ``tokens[i]`` is how many tokens lie before
boundary ``i`` and ``ranks[i]`` how good a cut there is. A chunk takes pieces while they fit,
then ends at the best-ranked boundary that still leaves it ``min_size`` tokens (the latest
among equals), so a strategy's preferred cuts win whenever they do not starve a chunk.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import pairwise

__all__ = ["Piece", "pack", "refine"]

Piece = tuple[int, int, int]
"""``(start, own, end)`` boundary indices of one chunk: it spans ``start..end``; ``start..own``
is the overlap carried from the chunk before, ``own..end`` its own new content."""


def refine(
    positions: Sequence[int],
    kinds: Sequence[int],
    starts: Sequence[int],
    words: Sequence[int],
    budget: int,
    *,
    word_kind: int,
    mid_word_kind: int,
) -> tuple[list[int], list[int], list[int]]:
    """Add word boundaries inside pieces over ``budget`` tokens, and token boundaries inside
    words over it, so every piece fits. Returns positions, kinds and token counts before each.
    """
    out_pos: list[int] = []
    out_kind: list[int] = []
    out_tok: list[int] = []
    before = [bisect_left(starts, p) for p in positions]
    for i, position in enumerate(positions):
        out_pos.append(position)
        out_kind.append(kinds[i])
        out_tok.append(before[i])
        if i + 1 == len(positions) or before[i + 1] - before[i] <= budget:
            continue
        lo, hi = before[i], before[i + 1]
        word_starts = [lo, *(k for k in range(lo + 1, hi) if words[k] != words[k - 1]), hi]
        for w, (a, b) in enumerate(pairwise(word_starts)):
            cuts = [(a, word_kind)] if w else []
            if b - a > budget:
                cuts += [(k, mid_word_kind) for k in range(a + 1, b)]
            for k, kind in cuts:
                if out_pos[-1] < starts[k] < positions[i + 1]:
                    out_pos.append(starts[k])
                    out_kind.append(kind)
                    out_tok.append(k)
    return out_pos, out_kind, out_tok


def pack(
    tokens: Sequence[int],
    ranks: Sequence[int],
    *,
    budget: int,
    min_size: int,
    overlap: int,
    overlap_rank: int,
    no_overlap_rank: int,
) -> list[Piece]:
    """Cut boundaries ``0..m`` into chunks of at most ``budget`` tokens (single pieces over it
    excepted: ``refine`` first). Consecutive chunks share up to ``overlap`` tokens, starting at a
    boundary ranked ``overlap_rank`` or better, unless the cut is ranked ``no_overlap_rank`` or
    better. A last chunk under ``min_size`` takes content from the one before when a cut as good
    as the current one allows it."""
    last = len(tokens) - 1
    rules = _Overlap(tokens, ranks, overlap, overlap_rank, no_overlap_rank)
    chunks: list[Piece] = []
    start = own = 0
    while own < last:
        while start < own and tokens[own + 1] - tokens[start] > budget:
            start = _next_ranked(ranks, start + 1, own, overlap_rank)
        end = max(own + 1, bisect_right(tokens, tokens[start] + budget, own + 1) - 1)
        cut = last if end >= last else _best_cut(tokens, ranks, start, own + 1, end, min_size)
        chunks.append((start, own, cut))
        start = rules.start(own, cut)
        own = cut
    if len(chunks) >= 2 and tokens[last] - tokens[chunks[-1][0]] < min_size:
        chunks[-2:] = _rebalance(tokens, ranks, chunks[-2], budget, min_size, rules)
    return chunks


class _Overlap:
    """Where the chunk after a cut starts: the earliest well-ranked boundary after the previous
    chunk's own start that leaves at most ``overlap`` tokens before the cut."""

    def __init__(
        self,
        tokens: Sequence[int],
        ranks: Sequence[int],
        overlap: int,
        overlap_rank: int,
        no_overlap_rank: int,
    ) -> None:
        self.tokens, self.ranks, self.overlap = tokens, ranks, overlap
        self.overlap_rank, self.no_overlap_rank = overlap_rank, no_overlap_rank

    def start(self, previous_own: int, cut: int) -> int:
        if self.overlap <= 0 or self.ranks[cut] >= self.no_overlap_rank:
            return cut
        lo = bisect_left(self.tokens, self.tokens[cut] - self.overlap, previous_own + 1, cut)
        return _next_ranked(self.ranks, lo, cut, self.overlap_rank)


def _rebalance(
    tokens: Sequence[int],
    ranks: Sequence[int],
    previous: Piece,
    budget: int,
    min_size: int,
    rules: _Overlap,
) -> list[Piece]:
    """The last two chunks, the cut between them moved back so that both reach ``min_size``,
    to the best boundary ranked no lower than the current cut; unchanged when there is none."""
    p_start, p_own, cut = previous
    last = len(tokens) - 1
    if tokens[last] - tokens[p_start] <= budget:
        return [(p_start, p_own, last)]
    best = -1
    for b in range(p_own + 1, cut):
        if (
            ranks[b] >= ranks[cut]
            and tokens[b] - tokens[p_start] >= min_size
            and min_size <= tokens[last] - tokens[b] <= budget
            and (best < 0 or ranks[b] >= ranks[best])
        ):
            best = b
    if best < 0:
        return [previous, (rules.start(p_own, cut), cut, last)]
    start = rules.start(p_own, best)
    if tokens[last] - tokens[start] > budget:
        start = best
    return [(p_start, p_own, best), (start, best, last)]


def _next_ranked(ranks: Sequence[int], lo: int, hi: int, rank: int) -> int:
    """First boundary in ``lo..hi-1`` ranked ``rank`` or better, else ``hi``."""
    for i in range(lo, hi):
        if ranks[i] >= rank:
            return i
    return hi


def _best_cut(
    tokens: Sequence[int], ranks: Sequence[int], start: int, lo: int, hi: int, min_size: int
) -> int:
    """Best-ranked boundary in ``lo..hi`` leaving at least ``min_size`` tokens (latest among
    equals); ``hi``, the fullest cut, when none does."""
    first = max(lo, bisect_left(tokens, tokens[start] + min_size, lo, hi + 1))
    best = hi
    for i in range(first, hi + 1):
        if ranks[i] >= ranks[best]:
            best = i
    return best if first <= hi else hi
