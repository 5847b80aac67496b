"""Keyword indexing and BM25 query speed, before and after, from one run (issue 11).

.venv/bin/python bench/index_speed.py [--baseline REV] [--quick] [--size-mb 50] [--skip-large]
                                     [--rounds 3] [--runs 1] [--after-src DIR]

The baseline revision's ``src`` is exported with ``git archive`` into a temporary folder (no
worktree, the checkout is not touched) and the same measuring child (this file, ``--child``)
runs against it and against this tree's ``src``, with the same interpreter and packages, one
after the other, each part in a fresh process:

1. **SciFact keyword-only** (5,183 Markdown files in a memory store, ``Knowledge`` with no
   embedder): ``Workspace.index_directory`` wall time; then the 300 test queries through
   ``MemoryIndex.search_keyword(k=100)`` and through bm25s (k1 1.5, b 0.75, stemmed, the same
   stop words; indexed from the strings in the same process), alternating query by query so
   both see the same machine load, ``--rounds`` rounds, median per query (and the first
   round's alone: the engine computes a term's scores the first time it meets the term after
   a write); nDCG@10 of the
   engine's ranking (a document scores its best chunk) and of ``Workspace.search``; and a
   SHA-256 of every chunk the load made and of every query's top 100 (ids and scores), so
   "same chunks, same scores" is checked bit for bit. ``--runs N`` loads SciFact N times per
   tree, alternating the trees, and reports the medians of the load's wall and CPU time.
2. **One large text file** (``--size-mb`` MB of SciFact abstracts, one paragraph each,
   cycled; written once to a folder and indexed through a ``LocalStore`` mount): wall time of
   ``index_directory``, the process's peak RSS (``ru_maxrss``, imports included) and its
   growth over the RSS before indexing, chunks, and how often a per-chunk progress callback
   was called (``Knowledge.index_files(progress=...)``; the baseline has none).

The machine is shared: the table gives medians, and the two trees run back to back.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _children import export_src, run_child

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "f9007fd"  # the last commit before the indexing work of issue 11


def _rss_mb() -> float:
    with Path("/proc/self/status").open(encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s() -> float:
    """CPU seconds of this process so far, every thread (the tokenizer's too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- child: SciFact ----------------------------------------------------------------------------


async def _scifact(quick: bool, rounds: int) -> dict[str, Any]:
    import bm25s
    import Stemmer

    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR, doc_scores
    from bastion import MemoryStore, Mount, Policy, Principal, Workspace
    from bastion.knowledge.eval import evaluate, load_dataset
    from bastion.knowledge.index.memory import MemoryIndex

    engine = _engine_module()
    dataset = load_dataset(DEFAULT_DIR, split="test")
    corpus = {d.doc_id: (d.title, d.text) for d in dataset.iter_corpus()}
    if quick:
        corpus = dict(list(corpus.items())[:500])
    queries = dict(dataset.queries)
    store = MemoryStore()
    owner = Principal.of("owner")
    raw = Workspace([Mount.of("/scifact", store, "read_write")], policy=Policy.allow_all())
    for doc_id, (title, text) in corpus.items():
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        await raw.write(f"/scifact/{doc_id}.md", body)
    kb = engine.Knowledge(MemoryIndex(), embedder=None)
    ws = Workspace(
        [Mount.of("/scifact", store, "read_write")],
        policy=Policy.allow_all(),
        knowledge=kb,
        principal=owner,
    )
    t0, c0 = time.perf_counter(), _cpu_s()
    summary = await ws.index_directory("/scifact")
    index_s, index_cpu = time.perf_counter() - t0, _cpu_s() - c0
    assert summary.indexed == len(corpus), summary.format()[:300]

    ids = list(corpus)
    texts = [f"{t} {x}".strip() for t, x in corpus.values()]
    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index(tokens, show_progress=False)
    peer_index_s = time.perf_counter() - t0

    ours: dict[str, list[float]] = {q: [] for q in queries}
    theirs: dict[str, list[float]] = {q: [] for q in queries}
    engine_run: dict[str, dict[str, float]] = {}
    peer_run: dict[str, dict[str, float]] = {}
    for _ in range(rounds):
        for qid, text in queries.items():
            t0 = time.perf_counter()
            hits = kb.index.search_keyword(text, 100)
            ours[qid].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
            docs, scores = model.retrieve(q, k=min(100, len(ids)), show_progress=False)
            theirs[qid].append(time.perf_counter() - t0)
            engine_run[qid] = doc_scores([(h.chunk.doc.path, h.score) for h in hits])
            peer_run[qid] = {ids[d]: float(s) for d, s in zip(docs[0], scores[0], strict=True)}
    ws_run = {}
    for qid, text in queries.items():
        result = await ws.search(text, mode="bm25", k=100)
        ws_run[qid] = doc_scores([(h.path, h.score) for h in result.hits])
    digest = _digests(kb.index, queries)  # after the timed rounds (it searches too)
    first_ms = statistics.median(v[0] for v in ours.values()) * 1e3
    first_peer_ms = statistics.median(v[0] for v in theirs.values()) * 1e3
    ours_ms = statistics.median(statistics.median(v) for v in ours.values()) * 1e3
    theirs_ms = statistics.median(statistics.median(v) for v in theirs.values()) * 1e3
    return {
        "docs": len(corpus),
        "chunks": summary.chunks,
        "index_s": index_s,
        "index_cpu_s": index_cpu,
        "peer_index_s": peer_index_s,
        "query_ms": ours_ms,
        "peer_query_ms": theirs_ms,
        "first_round_ms": first_ms,
        "first_round_peer_ms": first_peer_ms,
        "ndcg_engine": evaluate(engine_run, dataset.qrels).ndcg_at_10,
        "ndcg_workspace": evaluate(ws_run, dataset.qrels).ndcg_at_10,
        "ndcg_bm25s": evaluate(peer_run, dataset.qrels).ndcg_at_10,
        **digest,
    }


def _digests(index: Any, queries: dict[str, str]) -> dict[str, str]:
    """SHA-256 of every chunk the load made (id, document, number, lines, section, text) and
    of the first search's top 100 for every query (ids and scores, ``repr`` of the float):
    equal digests mean the same chunks and the same BM25 scores, bit for bit."""
    import hashlib

    chunks = hashlib.sha256()
    for doc_id in sorted(index.documents()):
        for c in index.chunks_of(doc_id):
            row = (c.chunk_id, c.doc.doc_id, c.seq, c.start_line, c.end_line, c.section, c.text)
            chunks.update(repr(row).encode())
    hits = hashlib.sha256()
    for text in queries.values():
        row = [(h.chunk.chunk_id, repr(h.score)) for h in index.search_keyword(text, 100)]
        hits.update(repr(row).encode())
    return {"chunks_sha256": chunks.hexdigest(), "hits_sha256": hits.hexdigest()}


def _engine_module() -> Any:
    try:
        from bastion.knowledge import engine
    except ImportError:  # an older tree's name
        from bastion.knowledge import service as engine  # type: ignore[no-redef]
    return engine


# -- child: one large file -----------------------------------------------------------------------


def make_large(path: Path, size_mb: int) -> None:
    """``size_mb`` MB (10^6 bytes) of SciFact abstracts, title line then text, a blank line
    between them, cycled."""
    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR

    size = size_mb * 1_000_000
    with (DEFAULT_DIR / "corpus.jsonl").open(encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    written = 0
    with path.open("wb") as out:
        while written < size:
            for doc in docs:
                block = f"{doc['title']}\n{doc['text']}\n\n".encode()
                block = block[: size - written]
                out.write(block)
                written += len(block)
                if written >= size:
                    break


async def _large(folder: str) -> dict[str, Any]:
    from bastion import LocalStore, Mount, Policy, Workspace
    from bastion.knowledge.index.memory import MemoryIndex

    engine = _engine_module()
    kb = engine.Knowledge(MemoryIndex(), embedder=None)
    calls = [0]
    if "progress" in inspect.signature(kb.index_files).parameters:
        plain = kb.index_files

        def count(_: object) -> None:
            calls[0] += 1

        async def index_files(files: Any, **kw: Any) -> Any:
            given = kw.pop("progress", None)  # the workspace may pass its own (segments)

            def both(step: object) -> None:
                count(step)
                if given is not None:
                    given(step)

            return await plain(files, progress=both, **kw)

        kb.index_files = index_files  # type: ignore[method-assign]
    ws = Workspace(
        [Mount.of("/big", LocalStore(folder), "read_write")],
        policy=Policy.allow_all(),
        knowledge=kb,
    )
    before = _rss_mb()
    t0, c0 = time.perf_counter(), _cpu_s()
    summary = await ws.index_directory("/big")
    took, cpu = time.perf_counter() - t0, _cpu_s() - c0
    peak = _peak_mb()
    assert summary.indexed == 1, summary.format()
    hits = kb.index.search_keyword("vitamin deficiency", 3)
    assert hits, "the large file was not indexed"
    return {
        "index_s": took,
        "index_cpu_s": cpu,
        "peak_rss_mb": peak,
        "rss_before_mb": before,
        "chunks": summary.chunks,
        "progress_calls": calls[0] if calls[0] else None,
        "first_hit_lines": [hits[0].chunk.start_line, hits[0].chunk.end_line],
    }


def child(args: argparse.Namespace) -> None:
    if args.child == "scifact":
        result = asyncio.run(_scifact(args.quick, args.rounds))
    else:
        result = asyncio.run(_large(args.folder))
    print(json.dumps(result))


# -- parent ---------------------------------------------------------------------------------------


def _run_child(src: Path, part: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    flags = ["--child", part, "--folder", str(folder), "--rounds", str(args.rounds)]
    return run_child(__file__, src, flags + (["--quick"] if args.quick else []), label=part)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--quick", action="store_true", help="500 documents, a 5 MB file")
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--runs", type=int, default=1, help="SciFact loads per tree, alternating (medians)"
    )
    parser.add_argument("--after-src", type=Path, default=ROOT / "src", help="the tree to time")
    parser.add_argument("--child")
    parser.add_argument("--folder", default="")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    size = 5 if args.quick else args.size_mb
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-index-speed-") as tmp:
        base_src = export_src(args.baseline, Path(tmp) / "baseline")
        folder = Path(tmp) / "large"
        folder.mkdir()
        if not args.skip_large:
            make_large(folder / "large.txt", size)
        trees = {"before": base_src, "after": args.after_src}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for _ in range(args.runs):  # alternating, so both trees meet the same load
            for name, src in trees.items():
                runs[name].append(_run_child(src, "scifact", args, folder))
        for name, src in trees.items():
            results[name] = {"scifact": _median_run(runs[name]), "scifact_runs": runs[name]}
            if not args.skip_large:
                results[name]["large"] = _run_child(src, "large", args, folder)
    _report(results, args, size)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run's figures, with the load's wall and CPU seconds the median of all runs
    (and each run's in ``index_s_all``, ``index_cpu_s_all``)."""
    out = dict(runs[0])
    for key in ("index_s", "index_cpu_s", "peer_index_s"):
        out[f"{key}_all"] = [r[key] for r in runs]
        out[key] = statistics.median(out[f"{key}_all"])
    out["same_digests"] = len({(r["chunks_sha256"], r["hits_sha256"]) for r in runs}) == 1
    return out


def _report(results: dict[str, dict[str, Any]], args: argparse.Namespace, size: int) -> None:
    def rows(r: dict[str, Any]) -> dict[str, str]:
        s = r["scifact"]
        out = {
            "BM25 query, engine vs bm25s (median ms, k=100)": (
                f"{s['query_ms'] / s['peer_query_ms']:.2f}x "
                f"({s['query_ms']:.3f} vs {s['peer_query_ms']:.3f} ms); first round "
                f"{s['first_round_ms'] / s['first_round_peer_ms']:.2f}x"
            ),
            f"index SciFact keyword-only, {s['docs']:,} files (median of {args.runs})": (
                f"{s['index_s']:.2f} s (CPU {s['index_cpu_s']:.2f} s), {s['chunks']:,} chunks "
                f"(bm25s {s['peer_index_s']:.2f} s on strings); runs "
                + ", ".join(f"{x:.2f}" for x in s["index_s_all"])
                + " s, CPU "
                + ", ".join(f"{x:.2f}" for x in s["index_cpu_s_all"])
                + " s"
            ),
            "chunks and BM25 scores (SHA-256 of each)": (
                f"{s['chunks_sha256'][:12]} / {s['hits_sha256'][:12]}"
                + ("" if s["same_digests"] else " (runs differ!)")
            ),
            "nDCG@10 engine / Workspace.search / bm25s": (
                f"{s['ndcg_engine']:.4f} / {s['ndcg_workspace']:.4f} / {s['ndcg_bm25s']:.4f}"
            ),
        }
        if "large" in r:
            big = r["large"]
            calls = big["progress_calls"]
            out[f"index one {size} MB text file, keyword-only"] = (
                f"{big['index_s']:.1f} s (CPU {big['index_cpu_s']:.1f} s), "
                f"peak RSS {big['peak_rss_mb']:.0f} MB "
                f"({big['peak_rss_mb'] - big['rss_before_mb']:+.0f} MB over "
                f"{big['rss_before_mb']:.0f} before), {big['chunks']:,} chunks, "
                + (f"{calls} progress calls" if calls else "no progress callback")
            )
        return out

    b, a = rows(results["before"]), rows(results["after"])
    same = all(
        results["before"]["scifact"][key] == results["after"]["scifact"][key]
        for key in ("chunks_sha256", "hits_sha256")
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}; "
        f"before = {args.baseline} (git archive), after = {args.after_src}; rounds {args.rounds}"
    )
    print("\n| path | before | after |\n|---|---|---|")
    for name in b:
        print(f"| {name} | {b[name]} | {a[name]} |")
    print(f"\nchunks and BM25 scores identical before and after: {same}")
    print("\n" + json.dumps(results))


if __name__ == "__main__":
    main()
