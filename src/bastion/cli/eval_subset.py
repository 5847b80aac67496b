"""``bastion eval --limit N``: a BEIR dataset cut to its first N documents *and* the queries
that can still be answered from them.

Scoring every query against a corpus cut to N documents would count as misses the documents
that were cut away, so the figures would mean nothing. The subset keeps only the queries whose
relevant judged documents (grade above 0) all lie among the first N, with their judgements,
and the command says how many it kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Subset", "subset_dataset"]


@dataclass(frozen=True)
class Subset:
    folder: Path
    """The cut dataset (same folder name as the original, so the run record names it)."""
    documents: int
    queries: int
    """Queries kept."""
    judged_queries: int
    """Queries the split judges in the whole dataset."""


def subset_dataset(dataset: Path, split: str, limit: int, into: Path) -> Subset:
    """Write the first ``limit`` documents of ``dataset`` and the queries of ``split`` whose
    relevant documents are all among them under ``into``; see the module doc."""
    from bastion.knowledge.eval.beir import load_qrels

    target = into / dataset.name
    (target / "qrels").mkdir(parents=True)
    kept_ids: set[str] = set()
    with (
        (dataset / "corpus.jsonl").open(encoding="utf-8") as source,
        (target / "corpus.jsonl").open("w", encoding="utf-8") as out,
    ):
        for line in source:
            if len(kept_ids) >= limit:
                break
            if not line.strip():
                continue
            kept_ids.add(str(json.loads(line)["_id"]))
            out.write(line)
    qrels = load_qrels(dataset / "qrels" / f"{split}.tsv")
    kept = {
        qid: judged
        for qid, judged in qrels.items()
        if all(doc in kept_ids for doc, grade in judged.items() if grade > 0)
        and any(grade > 0 for grade in judged.values())
    }
    with (target / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for qid, judged in kept.items():
            for doc, grade in judged.items():
                if doc in kept_ids:
                    out.write(f"{qid}\t{doc}\t{grade}\n")
    with (
        (dataset / "queries.jsonl").open(encoding="utf-8") as source,
        (target / "queries.jsonl").open("w", encoding="utf-8") as out,
    ):
        for line in source:
            if line.strip() and str(json.loads(line)["_id"]) in kept:
                out.write(line)
    return Subset(target, len(kept_ids), len(kept), len(qrels))
