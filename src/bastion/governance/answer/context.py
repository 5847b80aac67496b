"""Context assembly: which chunks a generator sees, within a token budget.

Greedy by score: the best chunk first, then each next-best chunk whose block (``§chunk_id``
line and text) still fits the budget. A chunk that does not fit is skipped and smaller,
lower-ranked ones may still fill the space. A low-score outlier (score below
``outlier_ratio`` x the best score) is left out once a better chunk is in: a weak chunk that
happens to fit must not dilute the answer. Tokens are counted with the tokenizer chunking used,
so the budget means the same thing as the chunks' size cap.

When even the best chunk alone is over the budget it is cut at a token boundary and flagged
``truncated``: a question that retrieved something is never answered from nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bastion.core.errors import ConfigurationError
from bastion.core.text import TokenCounter
from bastion.governance.answer.models import Context

__all__ = ["Assembly", "assemble"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Assembly:
    """The assembled context and what was left out, by chunk id."""

    contexts: tuple[Context, ...]
    """Included, best first, each with its block's token count."""
    over_budget: tuple[str, ...] = ()
    outliers: tuple[str, ...] = ()
    tokens: int = 0
    budget: int = 0

    @property
    def text(self) -> str:
        """The blocks as a generator sees them."""
        return "\n\n".join(c.block() for c in self.contexts)


def assemble(
    candidates: Sequence[Context],
    *,
    budget_tokens: int,
    counter: TokenCounter,
    outlier_ratio: float = 0.25,
) -> Assembly:
    """Pick contexts from ``candidates`` (any order) greedily by score within the budget."""
    if budget_tokens < 16:
        raise ConfigurationError("budget_tokens must be at least 16")
    if not 0 <= outlier_ratio < 1:
        raise ConfigurationError("outlier_ratio must be in [0, 1)")
    ranked = sorted(candidates, key=lambda c: -c.score)  # stable: ties keep the given order
    if not ranked:
        return Assembly(contexts=(), budget=budget_tokens)
    special = counter.special_tokens
    sizes = [n - special for n in counter.count_batch([c.block() for c in ranked])]
    best = ranked[0].score
    chosen: list[Context] = []
    over: list[str] = []
    outliers: list[str] = []
    used = 0
    for context, size in zip(ranked, sizes, strict=True):
        if chosen and best > 0 and context.score < outlier_ratio * best:
            outliers.append(context.chunk_id)
        elif used + size <= budget_tokens:
            chosen.append(replace(context, tokens=size))
            used += size
        else:
            over.append(context.chunk_id)
    if not chosen:
        top = _cut(ranked[0], budget_tokens, counter)
        chosen, used = [top], top.tokens
        over = over[1:]
    return Assembly(
        contexts=tuple(chosen),
        over_budget=tuple(over),
        outliers=tuple(outliers),
        tokens=used,
        budget=budget_tokens,
    )


def _cut(context: Context, budget: int, counter: TokenCounter) -> Context:
    """``context`` with its text cut so its block fits ``budget`` tokens."""
    special = counter.special_tokens
    header = counter.count(context.marker + "\n") - special
    room = max(1, budget - header - 1)
    tokens = counter.tokenize_batch([context.text])[0]
    text = context.text
    if len(tokens) > room:
        text = context.text[: tokens.starts[room]].rstrip()
    cut = replace(context, text=text, truncated=True)
    size = counter.count(cut.block()) - special
    while size > budget and room > 1:  # tokenizers may merge differently at the new end
        room -= 1
        cut = replace(cut, text=context.text[: tokens.starts[room]].rstrip())
        size = counter.count(cut.block()) - special
    return replace(cut, tokens=size)
