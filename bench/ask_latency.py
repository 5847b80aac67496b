"""Governed answers and governed search: latency of ``Workspace.ask`` (extractive answerer)
against ``Workspace.search`` alone, and of governed against unfiltered search, on one index.

Two corpora, each in a keyword-only in-memory index (BM25), one query at a time:

* **SciFact, the first 1,000 documents** (``--docs``), labelled half for role ``a``, half for
  role ``b`` in their front matter; the 300 test queries. The principal reads half the corpus.
* **The governed demo corpus** (``bastion.demo.corpus``: two tenants, labelled documents, the
  demo users), when the package has it; the demo's questions, each asked by its users.

Rows, per corpus (p50 / p99 in ms):

* ``Knowledge.search`` with no access filter: the unfiltered search on the same index;
* ``Workspace.search`` for a principal who may read everything, and for the governed
  principal(s): guard, access filter pushed into the index, post-check, hit records;
* ``Workspace.ask``: the same retrieval (``k``=8, bm25), every chunk re-checked, the built-in
  guardrails (question, each chunk, the answer), context assembly, the extractive answer,
  verification and the audit trail; and the same with ``guardrails=False``.

Ratios use medians. Measurements are interleaved query by query (each query runs every row
before the next query), after a warm-up pass, so drift on a shared machine hits every row alike.

Run: ``.venv/bin/python bench/ask_latency.py`` (``--quick``: 200 documents, 40 queries).
Prints a Markdown table; writes ``bench/results/ask_latency-<stamp>.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import DEFAULT_DIR  # noqa: E402
from bastion import MemoryStore, Mount, Policy, Principal, Workspace  # noqa: E402
from bastion.knowledge.engine import Knowledge  # noqa: E402
from bastion.knowledge.eval import describe_machine, load_dataset, percentile  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402

RESULTS = HERE / "results"
ASK_K = 8
"""``Workspace.ask``'s default retrieval depth; ``search alone`` uses the same."""
RATIO_K = 10


@dataclass
class Row:
    name: str
    seconds: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return percentile(self.seconds, 50) * 1e3

    @property
    def p99(self) -> float:
        return percentile(self.seconds, 99) * 1e3

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) * 1e3


@dataclass
class Corpus:
    """The measurements of one corpus."""

    title: str
    documents: int
    queries: int
    rows: dict[str, Row] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def row(self, key: str, name: str) -> Row:
        return self.rows.setdefault(key, Row(name))

    def ratio(self, top: str, bottom: str) -> float:
        return self.rows[top].median / self.rows[bottom].median


Call = Callable[[], Awaitable[Any]]


async def _timed(row: Row, call: Call) -> Any:
    t0 = time.perf_counter()
    result = await call()
    row.seconds.append(time.perf_counter() - t0)
    return result


# -- SciFact ---------------------------------------------------------------------------------


async def scifact(data: Path, docs: int, queries: int | None) -> Corpus:
    dataset = load_dataset(data, split="test")
    corpus = []
    for doc in dataset.iter_corpus():
        corpus.append(doc)
        if len(corpus) >= docs:
            break
    asked = list(dataset.queries.values())[: queries or None]
    store = MemoryStore()
    raw = Workspace([Mount.of("/scifact", store)], policy=Policy.allow_all())
    for n, doc in enumerate(corpus):
        body = f"# {doc.title}\n\n{doc.text}\n" if doc.title else f"{doc.text}\n"
        await raw.write(f"/scifact/{doc.doc_id}.md", f"---\nroles: [{'ab'[n % 2]}]\n---\n" + body)
    knowledge = Knowledge(MemoryIndex(), embedder=None)
    ws = Workspace([Mount.of("/scifact", store)], policy=Policy.allow_all(), knowledge=knowledge)
    t0 = time.perf_counter()
    summary = await ws.rebuild_index()  # as the system: every file, whoever may read it
    took = time.perf_counter() - t0
    assert summary.indexed == len(corpus), summary.format()[:300]
    reader = ws.with_principal(Principal.of("reader", roles={"a"}))
    boss = ws.with_principal(Principal.of("boss", roles={"a", "b"}))
    out = Corpus(
        f"SciFact, first {len(corpus)} documents (half for role a, half for b), "
        f"{len(asked)} test queries",
        len(corpus),
        len(asked),
    )
    out.facts["index_seconds"] = round(took, 2)
    out.facts["chunks"] = knowledge.index.count()
    statuses: dict[str, int] = {}
    leaks = 0
    role_of = {f"/scifact/{doc.doc_id}.md": "ab"[n % 2] for n, doc in enumerate(corpus)}
    rows = _rows(out, governed="reader (reads half)")
    for rep in range(2):  # the first pass warms caches and is thrown away
        for text in asked:
            await _measure(rows, knowledge, text, boss, {"reader (reads half)": reader})
            answer = await _timed(rows["ask"], lambda t=text: reader.ask(t, mode="bm25", k=ASK_K))
            await _timed(
                rows["bare_ask"],
                lambda t=text: reader.ask(t, mode="bm25", k=ASK_K, guardrails=False),
            )
            if rep:
                statuses[answer.status.value] = statuses.get(answer.status.value, 0) + 1
                leaks += sum(1 for c in answer.contexts if role_of.get(c.path) != "a")
        if not rep:
            for row in out.rows.values():
                row.seconds.clear()
    out.facts["answer_status"] = statuses
    out.facts["unauthorized_contexts"] = leaks
    return out


def _rows(out: Corpus, *, governed: str) -> dict[str, Row]:
    return {
        "unfiltered": out.row("unfiltered", f"Knowledge.search, no access filter, k={RATIO_K}"),
        "everything": out.row(
            "everything", f"Workspace.search, principal reads everything, k={RATIO_K}"
        ),
        "governed": out.row("governed", f"Workspace.search, {governed}, k={RATIO_K}"),
        "search": out.row("search", f"Workspace.search alone, {governed}, k={ASK_K}"),
        "ask": out.row(
            "ask", f"Workspace.ask (extractive, verified, guardrails), {governed}, k={ASK_K}"
        ),
        "bare_ask": out.row("bare_ask", f"Workspace.ask, guardrails=False, {governed}, k={ASK_K}"),
    }


async def _measure(
    rows: dict[str, Row],
    knowledge: Knowledge,
    text: str,
    everyone: Workspace,
    governed: dict[str, Workspace],
) -> None:
    await _timed(rows["unfiltered"], lambda: knowledge.search(text, mode="bm25", k=RATIO_K))
    await _timed(rows["everything"], lambda: everyone.search(text, mode="bm25", k=RATIO_K))
    for view in governed.values():
        await _timed(rows["governed"], lambda v=view: v.search(text, mode="bm25", k=RATIO_K))
        await _timed(rows["search"], lambda v=view: v.search(text, mode="bm25", k=ASK_K))


# -- the demo corpus -------------------------------------------------------------------------


async def demo(rounds: int) -> Corpus | None:
    try:
        from bastion.demo.corpus import (
            corpus_mounts,
            demo_policy,
            documents,
            user,
            write_corpus,
        )
        from bastion.demo.story import QUESTIONS
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="bastion-ask-bench-") as tmp:
        folder = Path(tmp) / "corpus"
        write_corpus(folder)
        knowledge = Knowledge(MemoryIndex(), embedder=None)
        ws = Workspace(
            corpus_mounts(folder),
            policy=demo_policy(),
            knowledge=knowledge,
            principal=Principal.of("operator"),
        )
        await ws.rebuild_index()
        asks = [(q, user(uid).principal) for q, ids in QUESTIONS for uid in ids]
        tenants = sorted({doc.tenant for doc in documents()})
        out = Corpus(
            f"demo corpus: {len(documents())} labelled documents of {len(tenants)} tenants, "
            f"{len(QUESTIONS)} questions asked by {len(asks)} users x {rounds} rounds",
            len(documents()),
            len(asks),
        )
        out.facts["chunks"] = knowledge.index.count()
        rows = _rows(out, governed="each demo user")
        statuses: dict[str, int] = {}
        leaks = 0
        for rep in range(rounds + 1):  # round 0 warms up
            for question, who in asks:
                view = ws.with_principal(who)
                everyone = ws.with_principal(
                    Principal.of(
                        "all", tenant=who.tenant, roles={"executive"}, clearance="restricted"
                    )
                )
                await _measure(rows, knowledge, question, everyone, {who.id: view})
                answer = await _timed(
                    rows["ask"], lambda v=view, q=question: v.ask(q, mode="bm25", k=ASK_K)
                )
                await _timed(
                    rows["bare_ask"],
                    lambda v=view, q=question: v.ask(q, mode="bm25", k=ASK_K, guardrails=False),
                )
                if rep == 1:
                    statuses[answer.status.value] = statuses.get(answer.status.value, 0) + 1
                    for context in answer.contexts:  # each must be readable by the asker
                        leaks += not await view.exists(context.path)
            if rep == 0:
                for row in out.rows.values():
                    row.seconds.clear()
        out.facts["answer_status"] = statuses
        out.facts["unauthorized_contexts"] = leaks
        return out


# -- report ----------------------------------------------------------------------------------


def table(corpus: Corpus) -> list[str]:
    lines = [
        f"**{corpus.title}**",
        "",
        "| row | p50 ms | p99 ms | x unfiltered (median) |",
        "|---|---:|---:|---:|",
    ]
    for key, row in corpus.rows.items():
        times = corpus.ratio(key, "unfiltered")
        lines.append(f"| {row.name} | {row.p50:.3f} | {row.p99:.3f} | {times:.2f}x |")
    lines += [
        "",
        f"- governed / unfiltered search at k={RATIO_K}: "
        f"**{corpus.ratio('governed', 'unfiltered'):.2f}x** (target <= 1.2x); governed / "
        f"principal-reads-everything: {corpus.ratio('governed', 'everything'):.2f}x",
        f"- ask / search alone (k={ASK_K}): **{corpus.ratio('ask', 'search'):.2f}x** "
        f"(ask adds {corpus.rows['ask'].median - corpus.rows['search'].median:.3f} ms at the "
        f"median); without guardrails {corpus.ratio('bare_ask', 'search'):.2f}x",
        f"- {json.dumps(corpus.facts)}",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--docs", type=int, default=1000, help="SciFact documents to index")
    parser.add_argument("--queries", type=int, default=None, help="SciFact queries (all: 300)")
    parser.add_argument("--rounds", type=int, default=30, help="rounds over the demo questions")
    parser.add_argument("--quick", action="store_true", help="200 documents, 40 queries")
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    args = parser.parse_args(argv)
    if args.quick:
        args.docs, args.queries, args.rounds = 200, 40, 5

    async def run() -> list[Corpus]:
        found = [await scifact(args.data, args.docs, args.queries)]
        story = await demo(args.rounds)
        if story is not None:
            found.append(story)
        return found

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    corpora = asyncio.run(run())
    lines = [f"Machine: {describe_machine()}; started {started}", ""]
    for corpus in corpora:
        lines += [*table(corpus), ""]
    text = "\n".join(lines)
    print(text)
    results = args.out or RESULTS
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data = {
        "machine": describe_machine(),
        "started": started,
        "corpora": [
            {
                "title": c.title,
                "documents": c.documents,
                "queries": c.queries,
                "facts": c.facts,
                "rows": {
                    k: {"name": r.name, "p50_ms": r.p50, "p99_ms": r.p99, "n": len(r.seconds)}
                    for k, r in c.rows.items()
                },
                "ratios": {
                    "governed_over_unfiltered": c.ratio("governed", "unfiltered"),
                    "governed_over_everything": c.ratio("governed", "everything"),
                    "ask_over_search": c.ratio("ask", "search"),
                    "ask_without_guardrails_over_search": c.ratio("bare_ask", "search"),
                },
            }
            for c in corpora
        ],
    }
    (results / f"ask_latency-{stamp}.md").write_text(text + "\n", encoding="utf-8")
    (results / f"ask_latency-{stamp}.json").write_text(json.dumps(data, indent=2) + "\n")
    return data


if __name__ == "__main__":
    main()
