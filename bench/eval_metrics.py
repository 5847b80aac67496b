"""Retrieval metrics: Bastion's pure-Python ``evaluate`` against ``pytrec_eval`` (issue 11).

.venv/bin/python bench/eval_metrics.py [--rounds 21]

One run, one machine: a BM25 run over BEIR SciFact (the engine's scores, top 100 for each of
the 300 test queries), scored at the cut-offs ``evaluate`` reports by default (nDCG, recall
and MRR at 1, 3, 5, 10, 100; per query and averaged) by

* ``bastion.knowledge.eval.evaluate``;
* ``pytrec_eval`` (trec_eval's C code): building the evaluator from the qrels plus scoring
  the run, as one call from scratch costs, and scoring alone with the evaluator built once.

Both give the same figures (``tests/knowledge/test_eval_reference.py`` asserts it to 1e-9).
Printed: the median and spread of wall milliseconds over the rounds with the median CPU
milliseconds (steadier on a busy machine), and what importing each costs (``-X importtime``,
a fresh interpreter each time, median of 7). The machine is
printed first; it is shared, so read the medians.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytrec_eval

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import DEFAULT_DIR  # noqa: E402
from bastion.knowledge.eval import DEFAULT_KS, describe_machine, evaluate, load_dataset  # noqa: E402
from bastion.knowledge.index.bm25 import BM25  # noqa: E402

CUT = ",".join(map(str, DEFAULT_KS))
MEASURES = {f"ndcg_cut.{CUT}", f"recall.{CUT}", "recip_rank"}


def bm25_run() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    dataset = load_dataset(DEFAULT_DIR, split="test")
    index, ids = BM25(), []
    for slot, doc in enumerate(dataset.iter_corpus()):
        index.add(slot, f"{doc.title} {doc.text}")
        ids.append(doc.doc_id)
    run = {}
    for qid, text in dataset.queries.items():
        scores = index.scores(text)
        top = np.argsort(-scores, kind="stable")[:100]
        run[qid] = {ids[i]: float(scores[i]) for i in top if scores[i] > 0}
    return run, {qid: dict(j) for qid, j in dataset.qrels.items()}


def pytrec_means(scored: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict:
    """The same figures as ``evaluate(...).figures``, from pytrec_eval's per-query output."""
    means = {}
    for k in DEFAULT_KS:
        for name, key in (("ndcg", f"ndcg_cut_{k}"), ("recall", f"recall_{k}")):
            means[f"{name}@{k}"] = math.fsum(scored.get(q, {}).get(key, 0.0) for q in qrels)
        means[f"mrr@{k}"] = math.fsum(
            rr if (rr := scored.get(q, {}).get("recip_rank", 0.0)) >= 1 / k - 1e-12 else 0.0
            for q in qrels
        )
    return {key: value / len(qrels) for key, value in means.items()}


def timed(fn: Callable[[], object], rounds: int) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) of each of ``rounds`` calls."""
    wall, cpu = [], []
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    return wall, cpu


def import_ms(module: str, before: str = "") -> float:
    """Median ms ``python -X importtime`` gives ``import module`` (cumulative, fresh
    interpreter, after running ``before``), over 7 runs."""

    def once() -> float:
        code = f"{before}; import {module}" if before else f"import {module}"
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True
        ).stderr.decode()
        for line in err.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].rstrip() == f" {module}":
                return int(parts[1]) / 1e3
        return 0.0  # loaded when the interpreter started

    return statistics.median(once() for _ in range(7))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    run, qrels = bm25_run()
    print(f"run: {len(run)} queries x top 100, {sum(map(len, run.values()))} scored docs")

    ours = evaluate(run, qrels).figures
    theirs = pytrec_means(pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run), qrels)
    worst = max(abs(ours[key] - theirs[key]) for key in ours)
    print(f"largest difference between the two over {len(ours)} figures: {worst:.1e}")

    built = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    cases = {
        "bastion evaluate (pure Python)": lambda: evaluate(run, qrels),
        "pytrec_eval: build evaluator + evaluate + means": lambda: pytrec_means(
            pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run), qrels
        ),
        "pytrec_eval: evaluate + means (evaluator built once)": lambda: pytrec_means(
            built.evaluate(run), qrels
        ),
    }
    print("\n| scorer | wall ms (median) | min - max | CPU ms (median) | rounds |")
    print("|---|---:|---:|---:|---:|")
    for name, fn in cases.items():
        wall, cpu = timed(fn, args.rounds)
        print(f"| {name} | {statistics.median(wall):.1f} | {min(wall):.1f} - {max(wall):.1f} | "
              f"{statistics.median(cpu):.1f} | {args.rounds} |")  # fmt: skip

    print("\n| import (python -X importtime, cumulative, median of 7) | ms |\n|---|---:|")
    print(f"| `import pytrec_eval` | {import_ms('pytrec_eval'):.1f} |")
    print(f"| `import pytrec_eval` with numpy already loaded (Bastion loads it anyway) | "
          f"{import_ms('pytrec_eval', 'import numpy'):.1f} |")  # fmt: skip
    for module in ("math", "array", "dataclasses", "types"):
        print(f"| `import {module}` (what the metrics module imports) | "
              f"{import_ms(module):.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
