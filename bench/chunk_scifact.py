"""Chunk the whole SciFact corpus with each strategy; print docs/s and chunk statistics.

.venv/bin/python bench/chunk_scifact.py [--max-tokens 256] [--overlap 0.1] [--strategy S]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bastion.knowledge.chunking import (
    Chunker,
    ChunkingConfig,
    Strategy,
    minilm_token_counter,
    violations,
)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--overlap", type=float, default=0.10)
    parser.add_argument("--strategy", choices=[s.value for s in Strategy], action="append")
    parser.add_argument("--check", action="store_true", help="also check every guarantee")
    args = parser.parse_args()

    with args.corpus.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    texts = [f"{row['title']}\n\n{row['text']}" for row in rows]
    doc_ids = [str(row["_id"]) for row in rows]
    counter = minilm_token_counter()
    started = time.perf_counter()
    doc_tokens = counter.count_batch(texts)
    tokenize_s = time.perf_counter() - started
    print(
        f"corpus: {len(texts)} docs, {sum(doc_tokens):,} tokens "
        f"(median {statistics.median(doc_tokens):.0f}/doc, "
        f"{sum(t > args.max_tokens for t in doc_tokens)} over the cap); "
        f"one tokenizer pass {tokenize_s:.2f}s"
    )
    print(
        f"{'strategy':<10} {'seconds':>8} {'docs/s':>8} {'chunks':>7} {'tok min':>7} "
        f"{'p10':>5} {'median':>6} {'mean':>6} {'max':>5} {'<25% not last':>14}"
    )
    for name in args.strategy or [s.value for s in Strategy]:
        config = ChunkingConfig(
            strategy=Strategy(name), max_tokens=args.max_tokens, overlap=args.overlap
        )
        chunker = Chunker(config, counter)
        started = time.perf_counter()
        per_doc = chunker.chunk_many(texts, doc_ids)
        seconds = time.perf_counter() - started
        sizes = sorted(c.token_count for chunks in per_doc for c in chunks)
        small = sum(c.token_count < args.max_tokens // 4 for chunks in per_doc for c in chunks[:-1])
        assert sizes[-1] <= args.max_tokens
        if args.check:
            for doc_id, text, chunks in zip(doc_ids, texts, per_doc, strict=True):
                problems = violations(
                    text, chunks, counter=counter, max_tokens=args.max_tokens, doc_id=doc_id
                )
                assert not problems, (doc_id, problems)
        print(
            f"{name:<10} {seconds:8.2f} {len(texts) / seconds:8.0f} {len(sizes):7d} "
            f"{sizes[0]:7d} {sizes[len(sizes) // 10]:5d} {statistics.median(sizes):6.0f} "
            f"{statistics.mean(sizes):6.1f} {sizes[-1]:5d} {small:14d}"
        )


if __name__ == "__main__":
    main()
