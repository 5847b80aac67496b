"""What ``Workspace.search`` adds to the engine call, per mode, on BEIR SciFact (issue 15).

    .venv/bin/python bench/search_overhead.py [--baseline REV] [--rounds 3] [--quick]
    .venv/bin/python bench/search_overhead.py --profile hybrid   # cProfile of the workspace call

One workspace as a user builds it: the 5,183 SciFact documents as Markdown files in a memory
store mounted at ``/scifact``, indexed by ``Workspace.index_directory`` into
``Knowledge.open`` (LanceDB tables, the packaged int8 MiniLM; vectors from the embedding cache
in ``bench/results/cache``). Then, for each mode (bm25, vector, hybrid) and each of the 300
test queries, ``k=10``, two calls with the same query, interleaved (their order alternates
query by query, so machine load and warm caches hit both alike):

* **workspace**: ``Workspace.search`` in a view for a principal (``with_principal``, as an
  agent's tools call it): operation and audit record, path parse, access filter pushed down,
  post-check, one ``stat`` per hit document, snippets;
* **engine**: ``Knowledge.search(query, mode=..., k=10)`` on the same knowledge, no filter.

Every query is sent once through the engine before timing, so both calls find its vector in
the embedding cache (a new query costs one model call, ~5 ms, in both alike; leaving it out
shows the workspace's own cost at its largest). ``--rounds`` rounds; p50 / p99 over all
calls, and the ratio of the p50s. The engine with the principal's filter is timed too (a
third interleaved call): the share of the gap that is the access filter inside the index.

``--baseline REV`` runs the same measuring child against ``git archive REV src`` first (the
checkout is not touched), so a before/after pair comes from one command; ``--after REV``
measures that revision instead of the working tree (work in progress of others in the
checkout stays out). ``--repeat N`` runs the pair N times, alternating, and adds the median
of each mode's ratios. The machine is shared: compare the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import platform
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _children import export_src, run_child
from _report import save_report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
MODES = ("bm25", "vector", "hybrid")


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1e3


async def _build(
    quick: bool, cache: Path, store_kind: str = "memory"
) -> tuple[Any, Any, Any, dict[str, str], Path]:
    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR
    from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.eval import load_dataset

    data = load_dataset(DEFAULT_DIR, split="test")
    corpus = list(data.iter_corpus())[: 500 if quick else None]
    queries = dict(data.queries)
    folder = Path(tempfile.mkdtemp(prefix="bastion-overhead-"))
    if store_kind == "local":
        (folder / "files").mkdir()
        store: Any = LocalStore(folder / "files")
    else:
        store = MemoryStore()
    writer = Workspace([Mount.of("/scifact", store, "read_write")], policy=Policy.allow_all())
    for doc in corpus:
        body = f"# {doc.title}\n\n{doc.text}\n" if doc.title else f"{doc.text}\n"
        await writer.write(f"/scifact/{doc.doc_id}.md", body)
    cache.mkdir(parents=True, exist_ok=True)
    embeddings = cache / "embeddings.sqlite"
    kb = Knowledge.open(folder / "index", embedder="local", embedding_cache=embeddings)
    owner = Workspace(
        [Mount.of("/scifact", store, "read_write")], policy=Policy.allow_all(), knowledge=kb
    )
    summary = await owner.index_directory("/scifact")
    assert summary.indexed == len(corpus), summary.format()[:300]
    agent = owner.with_principal(Principal.of("agent", roles={"reader"}))
    return agent, owner, kb, queries, folder


async def _measure(
    quick: bool, rounds: int, cache: Path, store_kind: str, modes: tuple[str, ...]
) -> dict[str, Any]:
    agent, owner, kb, queries, folder = await _build(quick, cache, store_kind)
    link = owner._link()
    texts = list(queries.values())
    try:
        out: dict[str, Any] = {"queries": len(texts), "rounds": rounds, "modes": {}}
        for mode in modes:
            for text in texts:  # warm: query vectors cached, terms seen once
                await kb.search(text, mode=mode, k=10)
                await agent.search(text, mode=mode, k=10)
            ws_t: list[float] = []
            en_t: list[float] = []
            fl_t: list[float] = []
            same = 0
            for r in range(rounds):
                for i, text in enumerate(texts):
                    flt = link.checks.access_filter(agent._searching.ctx, _root(), None)
                    order = (i + r) % 3
                    for step in range(3):
                        which = (order + step) % 3
                        t0 = time.perf_counter()
                        if which == 0:
                            result = await agent.search(text, mode=mode, k=10)
                            ws_t.append(time.perf_counter() - t0)
                        elif which == 1:
                            hits = await kb.search(text, mode=mode, k=10)
                            en_t.append(time.perf_counter() - t0)
                        else:
                            await kb.search(text, mode=mode, k=10, flt=flt)
                            fl_t.append(time.perf_counter() - t0)
                    if r == 0:
                        same += [h.chunk_id for h in result.hits] == [
                            h.chunk.chunk_id for h in hits
                        ]
            out["modes"][mode] = {
                "workspace_p50": _p(ws_t, 50),
                "workspace_p99": _p(ws_t, 99),
                "engine_p50": _p(en_t, 50),
                "engine_p99": _p(en_t, 99),
                "filtered_p50": _p(fl_t, 50),
                "ratio_p50": statistics.median(ws_t) / statistics.median(en_t),
                "same_hits": same,
            }
        return out
    finally:
        kb.close()
        shutil.rmtree(folder, ignore_errors=True)


def _root() -> Any:
    from bastion.core.paths import VPath

    return VPath.ROOT


async def _profile(mode: str, quick: bool, cache: Path, rounds: int, store_kind: str) -> None:
    agent, _owner, kb, queries, folder = await _build(quick, cache, store_kind)
    texts = list(queries.values())
    try:
        for text in texts:
            await kb.search(text, mode=mode, k=10)
            await agent.search(text, mode=mode, k=10)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(rounds):
            for text in texts:
                await agent.search(text, mode=mode, k=10)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    finally:
        kb.close()
        shutil.rmtree(folder, ignore_errors=True)


# -- parent ---------------------------------------------------------------------------------------


def _run_child(src: Path, args: argparse.Namespace) -> dict[str, Any]:
    flags = ["--child", "--rounds", str(args.rounds), "--cache", str(args.cache)]
    flags += ["--store", args.store, "--modes", args.modes]
    return run_child(
        __file__, src, flags + (["--quick"] if args.quick else []), label="measuring child"
    )


def _table(name: str, result: dict[str, Any]) -> list[str]:
    lines = [
        f"\n{name}\n",
        "| mode | Workspace.search p50 / p99 ms | engine p50 / p99 ms | ratio (p50) | "
        "engine + principal's filter p50 ms | same top 10 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode, m in result["modes"].items():
        lines.append(
            f"| {mode} | {m['workspace_p50']:.2f} / {m['workspace_p99']:.2f} | "
            f"{m['engine_p50']:.2f} / {m['engine_p99']:.2f} | **{m['ratio_p50']:.2f}x** | "
            f"{m['filtered_p50']:.2f} | {m['same_hits']}/{result['queries']} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="also measure git archive REV's src, first")
    parser.add_argument("--after", help="measure git archive REV's src, not the working tree")
    parser.add_argument("--repeat", type=int, default=1, help="runs of the pair, alternating")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 documents")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache")
    parser.add_argument("--profile", choices=MODES)
    parser.add_argument(
        "--store", choices=["memory", "local"], default="memory", help="where the files are"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile:
        asyncio.run(_profile(args.profile, args.quick, args.cache, args.rounds, args.store))
        return
    if args.child:
        modes = tuple(m for m in args.modes.split(",") if m)
        result = _measure(args.quick, args.rounds, args.cache, args.store, modes)
        print(json.dumps(asyncio.run(result)))
        return
    head = (
        f"SciFact {'500' if args.quick else '5,183'} documents, 300 test queries, k=10, "
        f"{args.rounds} rounds; files in a {args.store} store; {platform.platform()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    lines = [head]
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees: list[tuple[str, Path]] = []
        if args.baseline:
            trees.append((f"before ({args.baseline})", export_src(args.baseline, Path(tmp) / "b")))
        if args.after:
            trees.append((f"after ({args.after})", export_src(args.after, Path(tmp) / "a")))
        else:
            trees.append(("this tree", ROOT / "src"))
        for n in range(args.repeat):
            for name, src in trees:
                result = _run_child(src, args)
                runs.setdefault(name, []).append(result)
                lines += _table(name if args.repeat == 1 else f"{name}, run {n + 1}", result)
    if args.repeat > 1:
        lines += ["", "Median over the runs of each mode's ratio (p50 workspace / p50 engine):", ""]
        lines += ["| tree | " + " | ".join(runs[trees[0][0]][0]["modes"]) + " |"]
        lines += ["|---|" + "---:|" * len(runs[trees[0][0]][0]["modes"])]
        for name, results in runs.items():
            cells = []
            for mode in results[0]["modes"]:
                ratios = [r["modes"][mode]["ratio_p50"] for r in results]
                shown = ", ".join(f"{x:.2f}" for x in ratios)
                cells.append(f"**{statistics.median(ratios):.2f}x** ({shown})")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    save_report("search_overhead", text)


if __name__ == "__main__":
    main()
