"""Embedding on a GPU: plain sentence-transformers fp16 vs Bastion's PyTorch runtime, one run.

    .venv/bin/python bench/embed_gpu.py                    # CUDA when PyTorch sees a GPU
    .venv/bin/python bench/embed_gpu.py --limit 100        # CPU: a smoke run (says so)
    python3 bench/embed_gpu.py --model-dir DIR --data DIR  # model and SciFact copies elsewhere

Every engine embeds the same texts in the same process on the same device:

On CPU the corpus is cut to ``--limit`` documents (100): those relevant to the first test
queries, then others, and only those queries are asked.

* **peer** — plain sentence-transformers, the packaged all-MiniLM-L6-v2 in fp16
  (``model.half()``), ``batch_size=512``, max_seq_length 256 (on CPU: fp32, the same batch).
* **reference** — sentence-transformers in fp32 on the same device (on CPU the peer is the
  reference). Quality is measured against it.
* **bastion ...** — :class:`bastion.knowledge.embedders.LocalEmbedder` with
  ``runtime="torch"``: fp16 and bf16 (fp32 and bf16 on CPU); with and without length
  bucketing; attention padded (``scaled_dot_product_attention`` with the kernel PyTorch picks,
  or forced with :func:`torch.nn.attention.sdpa_kernel`: flash first, efficient, cuDNN, math)
  or packed (``varlen_attn``); plus ONNX Runtime fp16 when ``onnxruntime-gpu`` is installed.

Speed: the SciFact corpus (5,183 documents, title + " " + text as BEIR embeds them),
embedded whole ``--repeats`` times per engine after a warm-up, engines interleaved, the
median taken; docs/s and the ratio to the peer. Quality: each engine's
document vectors from its last timed pass against the reference's (cosine, mean and min), and
nDCG@10 of dense retrieval for the 300 SciFact test queries (embedded by the same engine)
against the reference's nDCG@10. The goal (issue 15): >= 4x the peer's docs/s, cosine >= 0.999
(min over documents), |nDCG@10 - reference| <= 0.005. An engine that fails (a kernel not
available for these inputs) is reported as failed, not dropped silently.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
try:
    import bastion  # noqa: F401
except ImportError as exc:
    # The GPU machine's image has PyTorch, tokenizers, safetensors, onnx(runtime) and
    # sentence-transformers, but not Bastion's other dependencies, which `import bastion`
    # loads: load the knowledge package from the source tree without the top-level one.
    print(f"# note: import bastion failed ({exc}); loading its knowledge package alone")
    sys.path.insert(0, str(HERE.parent / "src"))
    _package = types.ModuleType("bastion")
    _package.__path__ = [str(HERE.parent / "src" / "bastion")]
    sys.modules["bastion"] = _package

sys.path.insert(0, str(HERE))
from _scifact import DEFAULT_DIR, SciFact, dense_search, load_scifact, ndcg_at_k  # noqa: E402
from bastion.knowledge.embedders.local import (  # noqa: E402
    LocalEmbedder,
    cuda_available,
    packaged_model_dir,
)

GOAL_RATIO, GOAL_COS, GOAL_NDCG = 4.0, 0.999, 0.005
RESULTS = HERE / "results"


@dataclass
class Engine:
    label: str
    encode: Callable[[Any], np.ndarray]
    kernel: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    prepare: Callable[[Sequence[str]], Any] = list
    """Work done before the clock starts (nothing but a copy, except for a stage's engine)."""
    times: list[float] = field(default_factory=list)
    vectors: np.ndarray | None = None
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def run(self, inputs: Any) -> np.ndarray:
        with self.kernel():
            return np.asarray(self.encode(inputs), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.run(self.prepare(texts))


def st_engine(label: str, model_dir: Path, device: str, *, half: bool) -> Engine:
    from sentence_transformers import SentenceTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SentenceTransformer(str(model_dir), device=device)
    if half:
        model = model.half()
    model.max_seq_length = 256

    def encode(texts: Sequence[str]) -> np.ndarray:
        return model.encode(list(texts), batch_size=512, show_progress_bar=False)

    return Engine(label, encode)


def plain_runner(
    label: str,
    model_dir: Path,
    device: str = "cuda",
    *,
    model_only: bool = False,
    **runner_options: Any,
) -> Engine:
    """The default engine (fp16 on CUDA, fp32 on CPU) assembled by hand, one part changed:
    a runner option, or ``model_only``, which times the model's work alone (the texts are
    tokenized before the clock starts)."""
    from tokenizers import Encoding, Tokenizer

    from bastion.knowledge.embedders._bert_graph import BertShape
    from bastion.knowledge.embedders.torch_bert import TorchBert, TorchRunner

    shape = BertShape.from_config(json.loads((model_dir / "config.json").read_text()))
    dtype = torch.float16 if device == "cuda" else torch.float32
    model = TorchBert.from_file(
        model_dir / "model.safetensors", shape, device=torch.device(device), dtype=dtype
    )
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    runner = TorchRunner(model, batch_tokens=262144, max_batch=1024, **runner_options)
    if not model_only:
        return Engine(label, lambda texts: runner.encode(texts, tokenizer))

    def tokenize(texts: Sequence[str]) -> list[Encoding]:
        return tokenizer.encode_batch_fast(list(texts))

    return Engine(label, runner.run, prepare=tokenize)


def sdpa(*names: str) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A context that lets scaled_dot_product_attention use only these kernels, in order."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [getattr(SDPBackend, n) for n in names]

    def context() -> contextlib.AbstractContextManager[Any]:
        try:
            return sdpa_kernel(backends, set_priority=True)
        except TypeError:  # an older PyTorch: no priority order
            return sdpa_kernel(backends)

    return context


def bastion_engines(device: str, model_dir: Path) -> Iterator[tuple[str, Callable[[], Engine]]]:
    def make(label: str, kernel: Any = None, **options: Any) -> tuple[str, Callable[[], Engine]]:
        def build() -> Engine:
            options.setdefault("device", device)
            embedder = LocalEmbedder(model_dir=model_dir, **options)
            embedder.load()
            if options["device"] is None:
                picked = f"{embedder.device.value}, {embedder.runtime.value}, {embedder.variant}"
                print(f"# {label}: picked {picked}", flush=True)
            return Engine(label, embedder.encode, kernel or contextlib.nullcontext)

        return label, build

    if device == "cuda":
        yield make("bastion default (nothing asked: CUDA picked by itself)", device=None)
        yield make("bastion fp16 (default: bucketed, SDPA auto)", runtime="torch", variant="fp16")
        yield (
            "bastion fp16, no tokenizer prefetch",
            lambda: plain_runner("bastion fp16, no tokenizer prefetch", model_dir, prefetch=False),
        )
        yield (
            "bastion fp16, model only (texts tokenized beforehand)",
            lambda: plain_runner(
                "bastion fp16, model only (texts tokenized beforehand)", model_dir, model_only=True
            ),
        )
        yield make(
            "bastion fp16, batches of 64k tokens / 256 rows",
            runtime="torch",
            variant="fp16",
            batch_tokens=65536,
            max_batch=256,
        )
        yield make(
            "bastion fp16, batches of 128k tokens / 512 rows",
            runtime="torch",
            variant="fp16",
            batch_tokens=131072,
            max_batch=512,
        )
        yield make("bastion fp16, no bucketing", runtime="torch", variant="fp16", bucket=False)
        yield make(
            "bastion fp16, SDPA flash first",
            sdpa("FLASH_ATTENTION", "EFFICIENT_ATTENTION"),
            runtime="torch",
            variant="fp16",
        )
        yield make(
            "bastion fp16, SDPA efficient",
            sdpa("EFFICIENT_ATTENTION"),
            runtime="torch",
            variant="fp16",
        )
        yield make(
            "bastion fp16, SDPA cuDNN", sdpa("CUDNN_ATTENTION"), runtime="torch", variant="fp16"
        )
        yield make("bastion fp16, SDPA math", sdpa("MATH"), runtime="torch", variant="fp16")
        yield make(
            "bastion fp16, packed (varlen)", runtime="torch", variant="fp16", attention="packed"
        )
        yield make("bastion bf16", runtime="torch", variant="bf16")
        yield make(
            "bastion bf16, packed (varlen)", runtime="torch", variant="bf16", attention="packed"
        )
        yield make("bastion fp32 (torch)", runtime="torch", variant="fp32")
        if cuda_available():
            yield make("bastion fp16 (ONNX Runtime CUDA)", runtime="onnx", variant="fp16")
    else:
        yield make("bastion fp32 (torch, bucketed)", runtime="torch", variant="fp32")
        yield make("bastion fp32, no bucketing", runtime="torch", variant="fp32", bucket=False)
        yield (
            "bastion fp32, model only (texts tokenized beforehand)",
            lambda: plain_runner(
                "bastion fp32, model only (texts tokenized beforehand)",
                model_dir,
                "cpu",
                model_only=True,
            ),
        )
        yield make("bastion fp32, SDPA math", sdpa("MATH"), runtime="torch", variant="fp32")
        yield make(
            "bastion fp32, SDPA flash (CPU)",
            sdpa("FLASH_ATTENTION"),
            runtime="torch",
            variant="fp32",
        )
        yield make("bastion fp32, packed", runtime="torch", variant="fp32", attention="packed")
        yield make("bastion bf16", runtime="torch", variant="bf16")
        yield make("bastion int8 (ONNX, CPU default)", runtime="onnx", variant="int8")


def subset(data: SciFact, limit: int) -> tuple[SciFact, list[str], list[str]]:
    """``limit`` documents: those judged relevant to the first test queries (so that nDCG@10
    still means something), then the rest in corpus order; only the queries fully covered."""
    chosen: dict[str, None] = {}
    queries: list[int] = []
    for i, qid in enumerate(data.query_ids):
        relevant = [d for d in data.qrels.get(qid, {}) if d not in chosen]
        if len(chosen) + len(relevant) > limit // 2:
            break
        chosen.update(dict.fromkeys(relevant))
        queries.append(i)
    for doc_id in data.doc_ids:
        if len(chosen) >= limit:
            break
        chosen.setdefault(doc_id)
    index = {d: i for i, d in enumerate(data.doc_ids)}
    rows = sorted(index[d] for d in chosen)
    small = dataclasses.replace(
        data,
        doc_ids=[data.doc_ids[i] for i in rows],
        titles=[data.titles[i] for i in rows],
        texts=[data.texts[i] for i in rows],
        query_ids=[data.query_ids[i] for i in queries],
        queries=[data.queries[i] for i in queries],
        qrels={data.query_ids[i]: data.qrels[data.query_ids[i]] for i in queries},
    )
    return small, small.documents(), small.doc_ids


def tokenize_rate(model_dir: Path, docs: Sequence[str]) -> str:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    times = []
    for _ in range(3):
        started = time.perf_counter()
        encodings = tokenizer.encode_batch_fast(list(docs))  # what Bastion's engines call
        times.append(time.perf_counter() - started)
    tokens = sum(len(e) for e in encodings)
    return f"{len(docs) / statistics.median(times):.0f} docs/s ({tokens} tokens)"


def varlen_available() -> bool:
    try:
        from torch.nn.attention import varlen
    except ImportError:
        return False
    return hasattr(varlen, "varlen_attn")


def machine(device: str) -> str:
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        return f"{props.name}, {props.total_memory / 2**30:.0f} GiB, {os.cpu_count()} CPUs"
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores available, no CUDA"


def versions() -> str:
    parts = [f"python {platform.python_version()}", f"torch {torch.__version__}"]
    with contextlib.suppress(ImportError):
        import sentence_transformers

        parts.append(f"sentence-transformers {sentence_transformers.__version__}")
    with contextlib.suppress(ImportError):
        import onnxruntime

        parts.append(f"onnxruntime {onnxruntime.__version__}")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument(
        "--limit", type=int, help="embed only N documents (those relevant to the first queries)"
    )
    parser.add_argument("--repeats", type=int, help="timed passes per engine (5 CUDA, 2 CPU)")
    parser.add_argument("--only", help="run only engines whose label contains this text")
    parser.add_argument("--model-dir", type=Path, help="all-MiniLM-L6-v2 files (default: packaged)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR, help="SciFact (BEIR layout)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the .md/.json go")
    args = parser.parse_args(argv)

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    smoke = device != "cuda"
    limit = args.limit or (100 if smoke else None)
    repeats = args.repeats or (2 if smoke else 5)
    model_dir = args.model_dir or packaged_model_dir()

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    if smoke:
        say(
            "# NO CUDA: a CPU smoke run (fp32 peer, small corpus). It checks that every engine "
            "runs and agrees with the reference; its speeds say nothing about a GPU."
        )
    say(f"# machine: {machine(device)}")
    say(f"# {versions()}")
    if device == "cuda":
        varlen = "yes" if varlen_available() else "NO (padded fallback)"
        say(f"# varlen_attn for packed batches: {varlen}")
    if hasattr(os, "getloadavg"):
        say(f"# load average at start: {os.getloadavg()[0]:.2f}")
    data = load_scifact(args.data)
    docs, doc_ids = data.documents(), data.doc_ids
    if limit:
        data, docs, doc_ids = subset(data, limit)
    say(f"# corpus: {len(docs)} docs; {len(data.queries)} queries; {repeats} timed passes each")

    peer_label = "peer: sentence-transformers fp16, batch 512"
    ref_label = "reference: sentence-transformers fp32, batch 512"
    if smoke:
        peer_label = ref_label = "peer + reference: sentence-transformers fp32, batch 512"
    builders: list[tuple[str, Callable[[], Engine]]] = [
        (peer_label, lambda: st_engine(peer_label, model_dir, device, half=not smoke))
    ]
    if not smoke:
        builders.append((ref_label, lambda: st_engine(ref_label, model_dir, device, half=False)))
    builders += list(bastion_engines(device, model_dir))
    if args.only:
        builders = [b for b in builders if b[0] in (peer_label, ref_label) or args.only in b[0]]

    say(f"# tokenize only (the CPU floor of every engine here): {tokenize_rate(model_dir, docs)}")
    engines: list[Engine] = []
    failed: list[Engine] = []
    for label, build in builders:
        try:
            engine = build()
            engine.embed(docs[:64])  # warm-up: allocations, kernel selection, autotuning
            engines.append(engine)
        except Exception as exc:
            failed.append(Engine(label, lambda _t: np.empty(0), error=_one_line(exc)))
            say(f"  ! {label}: failed to start: {failed[-1].error}")

    for rep in range(repeats):
        for engine in engines:
            if engine.error:
                continue
            try:
                inputs = engine.prepare(docs)
                started = time.perf_counter()
                engine.vectors = engine.run(inputs)
                engine.times.append(time.perf_counter() - started)
            except Exception as exc:
                engine.error = _one_line(exc)
                say(f"  ! {engine.label}: failed: {engine.error}")
                continue
            print(f"  pass {rep + 1}: {engine.label}: {engine.times[-1]:.3f} s", flush=True)

    peer = engines[0] if engines and engines[0].label == peer_label else None
    reference = next((e for e in engines if e.label == ref_label), None)
    ref_ndcg: float | None = None
    for engine in engines:
        if engine.error or not engine.times:
            continue
        t = statistics.median(engine.times)
        engine.result["docs_per_s"] = len(docs) / t
        if peer is not None and peer.times:
            engine.result["ratio"] = statistics.median(peer.times) / t
        queries = engine.embed(data.queries)
        run = dict(zip(data.query_ids, dense_search(queries, engine.vectors, doc_ids), strict=True))
        engine.result["ndcg10"] = ndcg_at_k(run, data.qrels)
        if engine is reference:
            ref_ndcg = engine.result["ndcg10"]
    for engine in engines:
        if reference is None or reference.vectors is None or engine.vectors is None:
            continue
        if engine.error:
            continue
        cos = np.sum(engine.vectors * reference.vectors, axis=1)
        engine.result["cos_mean"], engine.result["cos_min"] = float(cos.mean()), float(cos.min())
        if ref_ndcg is not None and "ndcg10" in engine.result:
            engine.result["ndcg_delta"] = engine.result["ndcg10"] - ref_ndcg

    if hasattr(os, "getloadavg"):
        say(f"# load average at end: {os.getloadavg()[0]:.2f}")
    say()
    say(
        "| engine | docs/s (median) | x peer | cos to fp32 ref. (mean / min) | nDCG@10 | "
        "Δ nDCG@10 | goal |"
    )
    say("|---|---:|---:|---|---:|---:|---|")
    for engine in [*engines, *failed]:
        r = engine.result
        if engine.error:
            say(f"| {engine.label} | failed: {engine.error} | | | | | |")
            continue
        cos = f"{r['cos_mean']:.5f} / {r['cos_min']:.5f}" if "cos_mean" in r else "—"
        delta = f"{r['ndcg_delta']:+.4f}" if "ndcg_delta" in r else "—"
        goal = "—"
        if engine.label.startswith("bastion") and {"ratio", "cos_min", "ndcg_delta"} <= set(r):
            quality = r["cos_min"] >= GOAL_COS and abs(r["ndcg_delta"]) <= GOAL_NDCG
            if smoke:
                goal = "quality met" if quality else "quality NOT met"
            else:
                goal = "met" if quality and r["ratio"] >= GOAL_RATIO else "NOT met"
        say(
            f"| {engine.label} | {r['docs_per_s']:.1f} | {r.get('ratio', float('nan')):.2f} | "
            f"{cos} | {r['ndcg10']:.4f} | {delta} | {goal} |"
        )

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    base = args.out / f"embed_gpu-{device}-{stamp}"
    base.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    base.with_suffix(".json").write_text(
        json.dumps(
            {
                "device": device,
                "smoke": smoke,
                "machine": machine(device),
                "versions": versions(),
                "argv": sys.argv[1:],
                "corpus_docs": len(docs),
                "engines": {
                    e.label: {**e.result, "times": e.times, "error": e.error}
                    for e in [*engines, *failed]
                },
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    print(f"\nwritten: {base}.md / .json")
    return 0


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


if __name__ == "__main__":
    raise SystemExit(main())
