"""Retrieval evaluation: BEIR datasets, trec_eval-exact metrics, timed and recorded runs.

    from bastion.knowledge.eval import load_dataset, run_retrieval

    dataset = load_dataset("/data/scifact")          # test split: judged queries + qrels
    record = run_retrieval(dataset, my_search, mode="bm25", settings={"k1": 1.2})
    record.figures["ndcg@10"], record.save("runs/")

Modules: :mod:`~bastion.knowledge.eval.beir` (loading, streaming the corpus),
:mod:`~bastion.knowledge.eval.metrics` (nDCG, recall, MRR; :func:`evaluate`),
:mod:`~bastion.knowledge.eval.run` (:func:`run_retrieval`, :class:`RunRecord`),
:mod:`~bastion.knowledge.eval.significance` (:func:`paired_test`: is a difference noise?).
Scoring the workspace's own search end to end (``bastion eval``) composes a whole workspace,
so it lives with the command, in :mod:`bastion.cli.evaluation`.
See ``docs/evaluation.md``.
"""

from __future__ import annotations

from bastion.knowledge.eval.beir import (
    BeirDataset,
    DatasetError,
    Document,
    iter_corpus,
    load_corpus,
    load_dataset,
    load_qrels,
    load_queries,
)
from bastion.knowledge.eval.metrics import (
    DEFAULT_KS,
    Evaluation,
    Judgements,
    Qrels,
    Ranking,
    Rankings,
    evaluate,
    mean_metric,
    ndcg,
    ranked_ids,
    recall,
    reciprocal_rank,
)
from bastion.knowledge.eval.run import RunRecord, describe_machine, percentile, run_retrieval
from bastion.knowledge.eval.significance import PairedTest, paired_test

__all__ = [
    "DEFAULT_KS",
    "BeirDataset",
    "DatasetError",
    "Document",
    "Evaluation",
    "Judgements",
    "PairedTest",
    "Qrels",
    "Ranking",
    "Rankings",
    "RunRecord",
    "describe_machine",
    "evaluate",
    "iter_corpus",
    "load_corpus",
    "load_dataset",
    "load_qrels",
    "load_queries",
    "mean_metric",
    "ndcg",
    "paired_test",
    "percentile",
    "ranked_ids",
    "recall",
    "reciprocal_rank",
    "run_retrieval",
]
