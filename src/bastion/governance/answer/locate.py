"""Which lines of a cited chunk the answer took: a citation points at the sentence, the table
row or the list item an answer sentence came from, not at the whole chunk.

Each answer sentence is matched against the sentences of each chunk it cites
(:func:`~bastion.governance.answer.text.chunk_passages`, which keep their lines): the same
sentence (the extractive answerer copies them) or one that holds the other; failing that, the
chunk's sentences whose content words the answer sentence mostly repeats (a model's
paraphrase, a redacted sentence), the best first. A sentence matched to nothing cites the whole
chunk, as before: a citation never points at lines that hold none of what was said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bastion.governance.answer.models import Context
from bastion.governance.answer.text import Passage, answer_sentences, chunk_passages, terms

__all__ = ["SHARED", "cited_lines"]

SHARED = 0.6
"""A chunk sentence is taken when the answer sentence repeats this share of its content words
(and the best such sentence when none is the same sentence)."""


def _same(a: str, b: str) -> bool:
    x, y = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    return (
        bool(x) and bool(y) and (x == y or (len(y) >= 12 and y in x) or (len(x) >= 12 and x in y))
    )


def _taken(sentence: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages ``sentence`` was taken from."""
    exact = [p for p in passages if _same(sentence, p.sentence)]
    if exact:
        return exact[:1]
    said = terms(sentence)
    if not said:
        return []
    scored: list[tuple[float, int, Passage]] = []
    for i, passage in enumerate(passages):
        own = terms(passage.sentence)
        if own:
            share = len(own & said) / len(own)
            if share >= SHARED:
                scored.append((share, i, passage))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [p for _, _, p in scored]


def cited_lines(answer: str, contexts: Sequence[Context]) -> Mapping[str, list[tuple[int, int]]]:
    """For each cited chunk id, the file line ranges of the text the answer took from it
    (empty when none could be told apart: the citation then covers the chunk)."""
    by_id = {c.chunk_id: c for c in contexts}
    passages: dict[str, list[Passage]] = {}
    out: dict[str, list[tuple[int, int]]] = {}
    for sentence, ids in answer_sentences(answer):
        for cid in ids:
            context = by_id.get(cid)
            if context is None:
                continue
            if cid not in passages:
                passages[cid] = chunk_passages(context.text, context.section or context.title or "")
            found = out.setdefault(cid, [])
            for passage in _taken(sentence, passages[cid]):
                found.append(context.file_lines(*passage.lines))
    return out
