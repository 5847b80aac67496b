"""Answerability calibrated on data: the weights of :mod:`bastion.governance.answer.evidence`
and the floor chosen on the dev split of the answer evaluation set, reported on its test split.

For every (question, role) pair of a split, the chunks ``ask`` retrieves (hybrid, k=8, as that
role) get the bi-encoder's similarities (the packaged all-MiniLM-L6-v2), and the pair's
evidence is the best passage score. A pair is predicted answerable when that score reaches the
floor. The grid below is searched on dev for the best balanced accuracy (mean of the rate of
answerable pairs kept and of refusable pairs refused; ties: the widest margin); the chosen
point is then scored on test, once. The same for bm25 (no similarity).

Then ``bastion eval-answers`` gives the end-to-end table (answers, refusals, leaks).

Run: ``PYTHONPATH=src .venv/bin/python bench/answer_eval.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bastion.cli.eval_answers import _world
from bastion.core.principal import Principal
from bastion.governance.answer import Context
from bastion.governance.answer import evidence as ev
from bastion.knowledge.embedders import LocalEmbedder
from bastion.knowledge.eval.answer_set import Pair, load_answer_set
from bastion.workspace.asking import embedding_similarity

K = 8


async def _contexts(ws: Any, index: Any, who: Principal, question: str, mode: str) -> list[Context]:
    result = await ws.with_principal(who).search(question, mode=mode, k=K)
    out = []
    for hit in result.hits:
        chunk = next(c for c in index.chunks_of(hit.doc_id) if c.chunk_id == hit.chunk_id)
        out.append(
            Context(
                chunk_id=hit.chunk_id,
                doc_id=hit.doc_id,
                path=hit.path,
                start_line=hit.start_line,
                end_line=hit.end_line,
                text=chunk.text,
                score=hit.score,
                retrieval_score=hit.score,
                section=chunk.section,
                title=chunk.doc.title,
            )
        )
    return out


Row = tuple[float, float | None, bool, int, tuple[float, ...], int, bool]
Features = tuple[list[Row], bool]
"""Per passage: (coverage share, similarity, figure, covered terms); and the pair's label."""


async def features(mode: str) -> dict[str, list[Features]]:
    cache = Path(tempfile.gettempdir()) / f"bastion-answer-features-{mode}.pkl"
    if os.environ.get("ANSWER_EVAL_CACHE") and cache.exists():
        loaded: dict[str, list[Features]] = pickle.loads(cache.read_bytes())
        return loaded
    out = await _features(mode)
    cache.write_bytes(pickle.dumps(out))
    return out


async def _features(mode: str) -> dict[str, list[Features]]:
    answer_set = load_answer_set()
    embedder = LocalEmbedder()
    similarity = embedding_similarity(embedder)
    out: dict[str, list[Features]] = {"dev": [], "test": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name, corpus in answer_set.corpora.items():
            ws, index = await _world(corpus, Path(tmp) / name, mode != "bm25")
            for pair in answer_set.pairs("all", name):
                who = Principal.of(
                    f"eval-{pair.role}",
                    roles={pair.role},
                    clearance=corpus.clearance.get(pair.role),
                )
                contexts = await _contexts(ws, index, who, pair.case.question, mode)
                if mode != "bm25" and contexts:
                    contexts = await ev.with_similarities(pair.case.question, contexts, similarity)
                out[pair.case.split].append((_passages(pair, contexts), pair.answerable))
    return out


def _passages(pair: Pair, contexts: Sequence[Context]) -> list[Row]:
    """Per passage: (coverage share, similarity, figure, covered terms, the best cosine of
    each absent topic word of its part, the part's topic size, a name of the part absent)."""
    question = pair.case.question
    parts = ev.question_parts(question)
    seen = ev.held(contexts)
    rows: list[Row] = []
    saved = ev.SIMILARITY_WEIGHT, ev.FIGURE_BONUS
    try:
        ev.SIMILARITY_WEIGHT, ev.FIGURE_BONUS = 0.0, 0.0
        for w in ev.weigh(question, contexts):  # raw coverage share: no penalty
            part = parts[w.part]
            topic = ev.topic_terms(part)
            absent = tuple(
                max((c.term_similarities.get(t, -1.0) for c in contexts), default=-1.0)
                for t in sorted(topic - seen)
            )
            figure = ev.wants_figure(part) and bool(ev.numbers(w.passage.sentence))
            named = bool(ev.names(part) - seen)
            rows.append((w.score, w.similarity, figure, w.covered, absent, len(topic), named))
    finally:
        ev.SIMILARITY_WEIGHT, ev.FIGURE_BONUS = saved
    return rows


def pair_score(rows: list[Row], p: tuple[float, ...]) -> float:
    """The best score of a passage that holds a topic term (0.0 when none does)."""
    weight, base, bonus, penalty, match = p
    best = 0.0
    for share, sim, figure, covered, absent, size, named in rows:
        if covered == 0 and (sim is None or sim < ev.SIMILARITY_ALONE):
            continue
        semantic = 0.0 if sim is None else max(0.0, sim - base)
        missing = sum(1 for a in absent if a < match) / size if size else 0.0
        score = share + weight * semantic + (bonus if figure else 0.0) - penalty * missing
        score -= ev.NAME_PENALTY if named else 0.0
        best = max(best, score)
    return best


def balanced(
    data: list[Features], p: tuple[float, ...], floor: float
) -> tuple[float, float, float]:
    return _balanced([(pair_score(r, p), y) for r, y in data], floor)


def _balanced(scores: list[tuple[float, bool]], floor: float) -> tuple[float, float, float]:
    pos = sum(1 for _, y in scores if y) or 1
    neg = sum(1 for _, y in scores if not y) or 1
    kept = sum(1 for s, y in scores if y and s >= floor) / pos
    refused = sum(1 for s, y in scores if not y and s < floor) / neg
    return (kept + refused) / 2, kept, refused


def fit(data: list[Features], p: tuple[float, ...]) -> tuple[float, float, float]:
    """(balanced accuracy, relative width of the best floor interval, its middle)."""
    labelled = [(pair_score(r, p), y) for r, y in data]
    scores = sorted({round(s, 6) for s, _ in labelled})
    cuts = [(a + b) / 2 for a, b in itertools.pairwise(scores)] + [scores[-1] + 0.01]
    best: tuple[float, float, float] = (-1.0, 0.0, 0.0)
    run: list[float] = []
    for cut in cuts:
        acc = _balanced(labelled, cut)[0]
        if acc > best[0] + 1e-9:
            best, run = (acc, 0.0, cut), [cut]
        elif abs(acc - best[0]) <= 1e-9 and run:
            run.append(cut)
            lo, hi = run[0], run[-1]
            best = (acc, (hi - lo) / (1 + p[0]), (lo + hi) / 2)
        else:
            run = []
    return best


def main() -> None:
    for mode in ("hybrid", "bm25"):
        data = asyncio.run(features(mode))
        dense = mode != "bm25"
        weights = [0.0, 0.5, 1.0, 1.5, 2.0] if dense else [0.0]
        bases = [0.2, 0.3, 0.4, 0.5] if dense else [0.0]
        bonuses = [0.1, 0.2, 0.3]
        penalties = [0.0, 0.25, 0.5, 0.75, 1.0]
        matches = [0.3, 0.4, 0.5, 0.6] if dense else [2.0]
        results = []
        for p in itertools.product(weights, bases, bonuses, penalties, matches):
            acc, width, floor = fit(data["dev"], p)
            results.append(((acc, width), p, floor))
        (acc, width), chosen, floor = max(results)
        dev = balanced(data["dev"], chosen, floor)
        test = balanced(data["test"], chosen, floor)
        print(
            f"{mode}: chosen (weight, base, figure bonus, absent penalty, term match) = {chosen}, "
            f"floor = {floor:.3f}"
        )
        print(f"  dev  balanced={dev[0]:.3f} answerable kept={dev[1]:.3f} refused={dev[2]:.3f}")
        print(f"  test balanced={test[0]:.3f} answerable kept={test[1]:.3f} refused={test[2]:.3f}")


if __name__ == "__main__":
    main()
