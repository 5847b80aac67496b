"""Embedding speed and quality on BEIR SciFact: sentence-transformers vs Bastion's variants.

    .venv/bin/python bench/embed_scifact.py                       # CPU: baseline, fp32, int8, bf16
    .venv/bin/python bench/embed_scifact.py --limit 300 --repeats 1   # a quick look
    .venv/bin/python bench/embed_scifact.py --device cuda         # GPU: fp16 (and fp32)

One run, one machine, one process; every engine sees the same texts:

* **baseline** — plain sentence-transformers (the packaged all-MiniLM-L6-v2, fp32, batch 16,
  max_seq_length 256 as the model config says, offline). On CUDA a second reference row runs
  the same model in fp16 (``model.half()``).
* **bastion:<variant>** — :class:`bastion.knowledge.embedders.LocalEmbedder` (ONNX Runtime for
  fp32 and int8, PyTorch for bf16); ``default`` is whatever ``LocalEmbedder()`` picks here.
  sentence-transformers loads torch first, so the process's OpenMP wait policy is whatever it
  started with: run with ``OMP_WAIT_POLICY=PASSIVE`` to time bf16 as ``LocalEmbedder`` loads
  it in a process of its own (the peer then waits passively too).

Speed: the first ``--speed-docs`` documents (title + " " + text, as BEIR embeds them), timed
``--repeats`` times per engine with the engines interleaved (so background load hits all of
them alike); the median is reported as docs/s and tokens/s (tokens the model sees, special
tokens included, truncated at 256) and as a ratio to the baseline. Quality: the full corpus and
the 300 test queries, dense retrieval by dot product, nDCG@10; plus the cosine of each engine's
document vectors to the baseline's. With two or more Bastion engines, a second table scores
mixed-variant indexes: documents embedded by one variant, queries by another (what an index
built on one machine and searched from another holds). ``--cache-db`` stores the quality-pass
vectors in an :class:`~bastion.knowledge.embedders.EmbeddingCache` so a second run skips
recomputing them (the timed speed passes never use it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scifact import dense_search, load_scifact, ndcg_at_k
from bastion.knowledge.embedders import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    LocalEmbedder,
    Vectors,
)
from bastion.knowledge.embedders.local import cuda_available, packaged_model_dir

Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Engine:
    label: str
    encode: Encode
    name: str  # cache key for --cache-db
    times: list[float] = field(default_factory=list)
    result: dict[str, float | str] = field(default_factory=dict)
    bastion: bool = False
    doc_vecs: np.ndarray | None = None
    query_vecs: np.ndarray | None = None


class _Adapter(Embedder):
    """Lets a plain encode function sit behind CachedEmbedder for the quality pass."""

    def __init__(self, engine: Engine, dim: int) -> None:
        self._engine, self.name, self.dim, self.max_tokens = engine, engine.name, dim, 256

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self._engine.encode(list(texts)), dtype=np.float32)

    def count_tokens(self, text: str) -> int:  # pragma: no cover - unused here
        raise NotImplementedError


def sentence_transformers_engine(device: str, *, fp16: bool = False) -> Engine:
    import warnings

    from sentence_transformers import SentenceTransformer

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SentenceTransformer(str(packaged_model_dir()), device=device)
    if fp16:
        model = model.half()
    model.max_seq_length = 256

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            model.encode(list(texts), batch_size=16, show_progress_bar=False), dtype=np.float32
        )

    label = "sentence-transformers fp16 (ref.)" if fp16 else "baseline: sentence-transformers fp32"
    return Engine(label, encode, f"st/all-MiniLM-L6-v2:{'fp16' if fp16 else 'fp32'}:{device}")


def bastion_engine(variant: str, device: str, cache_dir: Path | None) -> Engine:
    asked = None if variant == "default" else variant
    embedder = LocalEmbedder(variant=asked, device=device, cache_dir=cache_dir)
    started = time.perf_counter()
    embedder.load()
    what = f"{embedder.variant.value} {embedder.runtime.value}"
    elapsed = time.perf_counter() - started
    print(f"  bastion:{variant} ({what}) ready in {elapsed:.1f} s", flush=True)
    label = f"bastion {what} ({device}{', the default' if asked is None else ''})"
    return Engine(label, embedder.encode, embedder.name + f":{device}", bastion=True)


def default_variants(device: str) -> str:
    if device == "cuda":
        return "fp16,fp32"
    import importlib.util

    return "fp32,int8,bf16" if importlib.util.find_spec("torch") else "fp32,int8"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        flags = Path("/proc/cpuinfo").read_text()
        extras = [
            f
            for f in ("avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16")
            if f" {f}" in flags
        ]
    except OSError:
        extras = []
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores available ({', '.join(extras) or 'no AVX-512'})"


def versions() -> str:
    import onnxruntime

    parts = [f"python {platform.python_version()}", f"onnxruntime {onnxruntime.__version__}"]
    try:
        import sentence_transformers
        import torch

        parts += [
            f"torch {torch.__version__}",
            f"sentence-transformers {sentence_transformers.__version__}",
        ]
    except ImportError:
        pass
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--variants",
        help="Bastion variants, 'default' = LocalEmbedder()'s choice "
        "(default: cpu fp32,int8,bf16 (bf16 with torch installed); cuda fp16,fp32)",
    )
    parser.add_argument("--limit", type=int, help="use only the first N corpus documents")
    parser.add_argument("--speed-docs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-quality", action="store_true", help="speed only")
    parser.add_argument(
        "--cache-dir", type=Path, help="ONNX artifact cache (default: the user cache)"
    )
    parser.add_argument("--cache-db", type=Path, help="reuse quality-pass vectors across runs")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    variants = (args.variants or default_variants(args.device)).split(",")
    if args.device == "cuda" and not cuda_available():
        print(
            "! onnxruntime has no CUDA provider here (pip install onnxruntime-gpu): "
            "Bastion variants are skipped, only sentence-transformers runs on the GPU"
        )
        variants = []

    print(f"# machine: {machine()}\n# {versions()}")
    print(f"# load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    data = load_scifact()
    docs = data.documents()
    doc_ids = data.doc_ids
    if args.limit:
        docs, doc_ids = docs[: args.limit], doc_ids[: args.limit]
    subset = docs[: args.speed_docs]

    engines: list[Engine] = []
    if not args.no_baseline:
        engines.append(sentence_transformers_engine(args.device))
        if args.device == "cuda":
            engines.append(sentence_transformers_engine("cuda", fp16=True))
    engines += [bastion_engine(v, args.device, args.cache_dir) for v in variants]

    counter = LocalEmbedder(variant="fp32", device="cpu", cache_dir=args.cache_dir)
    tokens = sum(len(e.ids) for e in counter._tokenizer.encode_batch(subset))
    print(
        f"# speed subset: {len(subset)} docs, {tokens} tokens; {args.repeats} timed passes each",
        flush=True,
    )

    for engine in engines:  # warm-up: first-call allocations, thread pools
        engine.encode(subset[:32])
    for rep in range(args.repeats):
        for engine in engines:
            started = time.perf_counter()
            engine.encode(subset)
            engine.times.append(time.perf_counter() - started)
            print(f"  pass {rep + 1}: {engine.label}: {engine.times[-1]:.1f} s", flush=True)

    base_time = statistics.median(engines[0].times) if not args.no_baseline else None
    for engine in engines:
        t = statistics.median(engine.times)
        engine.result.update(
            docs_per_s=len(subset) / t,
            tokens_per_s=tokens / t,
            ratio=(base_time / t) if base_time else float("nan"),
        )

    if not args.no_quality:
        cache = EmbeddingCache(args.cache_db) if args.cache_db else None
        base_vecs: np.ndarray | None = None
        for engine in engines:
            encode: Encode = engine.encode
            if cache is not None:
                cached = CachedEmbedder(_Adapter(engine, 384), cache)

                def encode(texts: Sequence[str], cached: CachedEmbedder = cached) -> np.ndarray:
                    return asyncio.run(cached.embed(texts))

            started = time.perf_counter()
            doc_vecs = encode(docs)
            elapsed = time.perf_counter() - started
            query_vecs = encode(data.queries)
            engine.doc_vecs, engine.query_vecs = doc_vecs, query_vecs
            run = dict(
                zip(data.query_ids, dense_search(query_vecs, doc_vecs, doc_ids), strict=True)
            )
            engine.result["ndcg10"] = ndcg_at_k(run, data.qrels)
            if cache is None:
                engine.result["full_docs_per_s"] = len(docs) / elapsed
            if base_vecs is None and engine is engines[0] and not args.no_baseline:
                base_vecs = doc_vecs
            elif base_vecs is not None:
                cos = np.sum(doc_vecs * base_vecs, axis=1)
                engine.result["cos_mean"], engine.result["cos_min"] = (
                    float(cos.mean()),
                    float(cos.min()),
                )
            print(
                f"  quality: {engine.label}: nDCG@10 {engine.result['ndcg10']:.4f} "
                f"({len(docs)} docs in {elapsed:.0f} s)",
                flush=True,
            )

    print(f"\n# load average at end: {os.getloadavg()[0]:.2f}")
    print(
        "\n| engine | docs/s | tokens/s | x baseline | full corpus docs/s | nDCG@10 "
        "| cos to baseline (mean / min) |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for e in engines:
        r = e.result
        cos = f"{r['cos_mean']:.4f} / {r['cos_min']:.4f}" if "cos_mean" in r else "—"
        ndcg = f"{r['ndcg10']:.4f}" if "ndcg10" in r else "—"
        full = f"{r['full_docs_per_s']:.1f}" if "full_docs_per_s" in r else "—"
        print(
            f"| {e.label} | {r['docs_per_s']:.1f} | {r['tokens_per_s']:.0f} | "
            f"{r['ratio']:.2f} | {full} | {ndcg} | {cos} |"
        )
    mixed = mixed_variants(engines, data, doc_ids)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine(),
                    "versions": versions(),
                    "argv": sys.argv[1:],
                    "speed_docs": len(subset),
                    "speed_tokens": tokens,
                    "corpus_docs": len(docs),
                    "engines": {e.label: {**e.result, "times": e.times} for e in engines},
                    "mixed": mixed,
                },
                indent=2,
            )
        )
    return 0


def mixed_variants(engines: Sequence[Engine], data: Any, doc_ids: Sequence[str]) -> list[Any]:
    """nDCG@10 of every pair of Bastion engines: documents by one, queries by the other."""
    ours = [e for e in engines if e.bastion and e.doc_vecs is not None]
    if len(ours) < 2:
        return []
    print("\n| documents embedded by | queries embedded by | nDCG@10 |")
    print("|---|---|---:|")
    rows = []
    for docs_by in ours:
        for queries_by in ours:
            assert docs_by.doc_vecs is not None and queries_by.query_vecs is not None
            hits = dense_search(queries_by.query_vecs, docs_by.doc_vecs, doc_ids)
            ndcg = ndcg_at_k(dict(zip(data.query_ids, hits, strict=True)), data.qrels)
            rows.append([docs_by.label, queries_by.label, ndcg])
            print(f"| {docs_by.label} | {queries_by.label} | {ndcg:.4f} |")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
