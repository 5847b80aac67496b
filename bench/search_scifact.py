"""SciFact search benchmark: Bastion's bm25, vector and hybrid against bm25s and rank_bm25.

One run, one corpus (BEIR SciFact, 5,183 documents, 300 test queries), the same machine:

* quality: nDCG@10, Recall@10/100, MRR@10 (``bastion.knowledge.eval``);
* query latency p50 / p99 (ms), one query at a time, tokenization included, Bastion through
  ``Workspace.search`` (guard, access filter, post-check included);
* indexing time: the peers from pre-loaded strings; Bastion from files in a workspace
  (parse, chunk, embed, index);
* the hybrid fusion default: RRF against weighted score fusion at several weights, chosen on
  the *train* queries, reported on the test queries;
* ACL-filtered against unfiltered search latency;
* write-to-searchable latency: a write through the workspace, then the search that finds it.

Run: ``.venv/bin/python bench/search_scifact.py`` (``--quick`` for a 500-document smoke run,
``--no-dense`` to skip the embedding model). Embeddings are cached in
``bench/results/cache`` so a second run does not embed again (the first run's indexing time is
the cold one; the run prints which it was).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import save_report  # noqa: E402
from _scifact import DEFAULT_DIR, doc_scores, p50_p99_ms  # noqa: E402
from bastion import MemoryStore, Mount, Policy, Principal, Workspace  # noqa: E402
from bastion.knowledge.engine import Knowledge  # noqa: E402
from bastion.knowledge.eval import evaluate, load_dataset  # noqa: E402
from bastion.knowledge.index import fusion  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402

RESULTS = HERE / "results"


def _row(name: str, rankings: dict[str, dict[str, float]], qrels, lat, extra: str = "") -> str:
    ev = evaluate(rankings, qrels)
    p50, p99 = p50_p99_ms(lat) if lat else (float("nan"), float("nan"))
    return (
        f"| {name} | {ev.ndcg_at_10:.4f} | {ev.recall_at_10:.4f} | {ev.recall_at_100:.4f} | "
        f"{ev.mrr_at_10:.4f} | {p50:.2f} | {p99:.2f} | {extra} |"
    )


def run_peers(corpus, queries, qrels, out: list[str]) -> None:
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    ids = list(corpus)
    texts = [corpus[i] for i in ids]
    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index(tokens, show_progress=False)
    build = time.perf_counter() - t0
    rankings, lat = {}, []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(q, k=100, show_progress=False)
        lat.append(time.perf_counter() - t0)
        rankings[qid] = {ids[d]: float(s) for d, s in zip(docs[0], scores[0], strict=True)}
    out.append(
        _row(
            "bm25s 0.3 (k1 1.5, b 0.75, stemmed, stop words)",
            rankings,
            qrels,
            lat,
            f"{build:.2f} s",
        )
    )

    t0 = time.perf_counter()
    vocab = tokens.vocab
    inverse = {v: k for k, v in vocab.items()}
    corpus_tokens = [[inverse[t] for t in doc] for doc in tokens.ids]
    okapi = BM25Okapi(corpus_tokens, k1=1.5, b=0.75)
    build = time.perf_counter() - t0
    rankings, lat = {}, []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        q = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )[0]
        scores = okapi.get_scores(q)
        top = np.argsort(-scores)[:100]
        lat.append(time.perf_counter() - t0)
        rankings[qid] = {ids[i]: float(scores[i]) for i in top}
    out.append(_row("rank_bm25 BM25Okapi (same tokens)", rankings, qrels, lat, f"{build:.2f} s"))


async def build_workspace(
    corpus, knowledge: Knowledge, *, labelled: bool
) -> tuple[Workspace, float]:
    """Files written straight into the store, then indexed by ``index_directory``."""
    store = MemoryStore()
    owner = Principal.of("owner", roles={"a", "b"})  # may read both halves of a labelled run
    ws = Workspace(
        [Mount.of("/scifact", store, "read_write")],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        principal=owner,
    )
    raw = Workspace(
        [Mount.of("/scifact", store, "read_write")], policy=Policy.allow_all(), principal=owner
    )
    for n, (doc_id, (title, text)) in enumerate(corpus.items()):
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        if labelled:  # half the corpus for role "a", half for role "b"
            body = f"---\nroles: [{'a' if n % 2 else 'b'}]\n---\n" + body
        await raw.write(f"/scifact/{doc_id}.md", body)
    t0 = time.perf_counter()
    summary = await ws.index_directory("/scifact")
    took = time.perf_counter() - t0
    assert summary.indexed == len(corpus), summary.format()[:500]
    return ws, took


async def search_all(ws: Workspace, queries, mode: str, k: int = 100):
    rankings, lat = {}, []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        result = await ws.search(text, mode=mode, k=k)
        lat.append(time.perf_counter() - t0)
        rankings[qid] = doc_scores([(h.path, h.score) for h in result.hits])
    return rankings, lat


async def candidates(knowledge: Knowledge, queries) -> dict[str, tuple[list, list]]:
    out = {}
    for qid, text in queries.items():
        vec = (await knowledge.embedder.embed([text]))[0]
        out[qid] = (
            knowledge.index.search_keyword(text, 200),
            knowledge.index.search_vector(vec, 200),
        )
    return out


def fused(cands, fuse: Callable) -> dict[str, dict[str, float]]:
    return {
        qid: doc_scores([(h.chunk.doc.path, h.score) for h in fuse(kw, vec)])
        for qid, (kw, vec) in cands.items()
    }


async def run_bastion(
    corpus,
    test_q,
    train_q,
    qrels_test,
    qrels_train,
    dense: bool,
    out: list[str],
    notes: list[str],
    cache: Path,
) -> None:
    # keyword-only knowledge: the BM25 path on its own
    kb = Knowledge(MemoryIndex(), embedder=None)
    ws, took = await build_workspace(corpus, kb, labelled=False)
    rankings, lat = await search_all(ws, test_q, "bm25")
    out.append(
        _row(
            "**bastion bm25** (Workspace.search, keyword-only index)",
            rankings,
            qrels_test,
            lat,
            f"{took:.2f} s (parse + chunk + index)",
        )
    )
    engine, lat = {}, []
    for qid, text in test_q.items():
        t0 = time.perf_counter()
        hits = kb.index.search_keyword(text, 100)
        lat.append(time.perf_counter() - t0)
        engine[qid] = doc_scores([(h.chunk.doc.path, h.score) for h in hits])
    out.append(
        _row(
            "bastion bm25 engine alone (MemoryIndex.search_keyword, k=100)", engine, qrels_test, lat
        )
    )
    # write-to-searchable on the BM25 path
    notes.append(await write_to_searchable(ws, "bm25", 50))
    # ACL-filtered vs unfiltered (its own labelled keyword index)
    notes.append(await acl_latency(corpus, kb, test_q))
    if not dense:
        return
    folder = Path(tempfile.mkdtemp(prefix="bastion-bench-"))
    cache.mkdir(parents=True, exist_ok=True)
    warm = (cache / "embeddings.sqlite").exists()
    try:
        kb = Knowledge.open(folder, embedder="local", embedding_cache=cache / "embeddings.sqlite")
        ws, took = await build_workspace(corpus, kb, labelled=False)
        state = "warm embedding cache" if warm else "cold: every chunk embedded"
        for mode in ("vector", "hybrid"):
            rankings, lat = await search_all(ws, test_q, mode)
            out.append(
                _row(
                    f"**bastion {mode}** (LanceDB + int8 MiniLM, default fusion {kb.fusion})",
                    rankings,
                    qrels_test,
                    lat,
                    f"{took:.1f} s ({state})" if mode == "vector" else "",
                )
            )
        # fusion: choose on train, report on test
        train = await candidates(kb, train_q)
        test = await candidates(kb, test_q)
        options: dict[str, Callable] = {"rrf (c=60)": fusion.rrf}
        for alpha in (0.3, 0.5, 0.7):
            options[f"weighted alpha={alpha}"] = lambda a, b, al=alpha: fusion.weighted(
                a, b, alpha=al
            )
        notes.append("\n| fusion | train nDCG@10 (809 q) | test nDCG@10 (300 q) |\n|---|---:|---:|")
        for name, fn in options.items():
            tr = evaluate(fused(train, fn), qrels_train).ndcg_at_10
            te = evaluate(fused(test, fn), qrels_test).ndcg_at_10
            notes.append(f"| {name} | {tr:.4f} | {te:.4f} |")
        notes.append(await write_to_searchable(ws, "hybrid", 20))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def acl_latency(corpus, kb: Knowledge, queries) -> str:
    """One labelled index (half the corpus for role ``a``, half for ``b``), bm25, k=100:
    the bare index call, ``Workspace.search`` for a principal who may read everything, and
    ``Workspace.search`` for one who may read half. The ACL's own cost is the last against
    the second (same hit records, same guard); the first shows what the hit records cost."""
    labelled = Knowledge(MemoryIndex(), embedder=None)
    ws, _ = await build_workspace(corpus, labelled, labelled=True)
    viewer = ws.with_principal(Principal.of("reader", roles={"a"}))
    everyone = ws.with_principal(Principal.of("boss", roles={"a", "b"}))
    plain, filtered, unfiltered = [], [], []
    leaks = 0
    for text in queries.values():
        t0 = time.perf_counter()
        labelled.index.search_keyword(text, 100)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await everyone.search(text, mode="bm25", k=100)
        unfiltered.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = await viewer.search(text, mode="bm25", k=100)
        filtered.append(time.perf_counter() - t0)
        leaks += sum(1 for h in result.hits if h.labels.roles != frozenset({"a"}))
    p, u, f = (statistics.median(x) * 1e3 for x in (plain, unfiltered, filtered))
    return (
        f"\nACL: bm25 k=100 over the labelled corpus, p50: bare index call {p:.2f} ms; "
        f"Workspace.search for a principal who may read everything {u:.2f} ms; for one who "
        f"may read half {f:.2f} ms ({f / u:.2f}x the unfiltered search, {f / p:.2f}x the bare "
        f"index call); hits the principal may not read: {leaks}"
    )


async def write_to_searchable(ws: Workspace, mode: str, n: int) -> str:
    writes, found = [], 0
    for i in range(n):
        token = f"zqx{i}marker{int(time.time() * 1e6) % 10_000_000}"
        t0 = time.perf_counter()
        await ws.write(
            f"/scifact/new-{mode}-{i}.md", f"# Fresh note {i}\n\nThe word {token} is new.\n"
        )
        result = await ws.search(token, mode="bm25", k=1)
        t2 = time.perf_counter()
        writes.append(t2 - t0)
        found += bool(result.hits) and result.hits[0].path.endswith(f"new-{mode}-{i}.md")
    p50, p99 = p50_p99_ms(writes)
    return (
        f"\nwrite-to-searchable ({mode} index): write + first search that finds it, "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms; found at rank 1: {found}/{n}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--quick", action="store_true", help="500 documents (smoke run)")
    parser.add_argument("--no-dense", action="store_true", help="skip vector and hybrid")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache")
    parser.add_argument(
        "--publish", action="store_true", help="bench/published/search_scifact.json"
    )
    parser.add_argument("--no-peers", action="store_true", help="skip bm25s, rank_bm25 (no extra)")
    args = parser.parse_args()

    test = load_dataset(args.data, split="test")
    train = load_dataset(args.data, split="train")
    corpus = {d.doc_id: (d.title, d.text) for d in test.iter_corpus()}
    if args.quick:
        test_q = dict(list(test.queries.items())[:50])
    if args.quick:
        keep = set(list(corpus)[:500])
        corpus = {k: v for k, v in corpus.items() if k in keep}
    test_q, train_q = dict(test.queries), dict(train.queries)
    flat = {k: f"{t} {x}".strip() for k, (t, x) in corpus.items()}

    out = [
        f"SciFact: {len(corpus)} documents, {len(test_q)} test queries; "
        f"machine: {__import__('bastion.knowledge.eval', fromlist=['x']).describe_machine()}",
        "",
        "| system | nDCG@10 | R@10 | R@100 | MRR@10 | p50 ms | p99 ms | index time |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes: list[str] = []
    if not args.no_peers:
        run_peers(flat, test_q, test.qrels, out)
    asyncio.run(
        run_bastion(
            corpus,
            test_q,
            train_q,
            test.qrels,
            train.qrels,
            not args.no_dense,
            out,
            notes,
            args.cache,
        )
    )
    text = "\n".join(out + notes)
    print(text)
    save_report("search_scifact", text, {"table": out, "notes": notes})
    if args.publish:
        from _results import publish_markdown

        command = " ".join([".venv/bin/python bench/search_scifact.py", *sys.argv[1:]])
        publish_markdown("search_scifact", "Search on SciFact", command, text)


if __name__ == "__main__":
    main()
