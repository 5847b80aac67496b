"""The hot paths of issue 11, before and after, from one run on one machine.

.venv/bin/python bench/hot_paths.py [--baseline REV] [--quick] [--skip-large] [--no-peers]

The script checks the baseline revision out into a temporary git worktree and runs the same
measuring child (this file, ``--child``) once against the baseline's ``src`` and once against
this tree's, with the same interpreter and packages, one after the other. The child uses only
public names that exist in both trees. Rows (median of rounds; µs per call unless stated):

1. ``Workspace.read_bytes`` of a 4 KiB file on a local store, against raw
   ``os.open/read/close`` of the same file (ratio).
2. The ``read_file`` tool (``Toolset.call``) against ``Workspace.read_text`` of the same file
   (ratio), with the store calls (``stat``/``read``/``entries``...) and audit records per tool
   call, counted on the store object. Beside it, the floor of the tool's output: ``read_text``
   followed by the least work its numbered page needs (split into rows, join with kept
   ``cat -n`` numbers; no argument check, no tool layer), against ``read_text`` alone.
3. The blocking facade ``SyncWorkspace.read_bytes`` against ``await Workspace.read_bytes``
   (ratio).
4. BM25 query on SciFact test queries: ``MemoryIndex.search_keyword(k=100)`` against bm25s
   (same queries, ms per query, ratio of medians): the first pass after indexing (each term
   scored on first use, or all at once by the first search after a bulk add; its median and
   its mean, which carries that pass) and the best of two more (terms seen; bm25s: the best
   of three). The first pass is also compared with bm25s's own first pass after indexing
   (both meet each query's data for the first time: caches cold alike; bm25s's best pass
   is a warm one).
5. Index SciFact keyword-only: 5,183 Markdown files in a memory store, ``index_directory``
   (seconds), bm25s indexing the strings as the floor.
6. Index one 50 MB text file keyword-only in a fresh process: seconds and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "237e6ce"  # the last commit before issue 11's work


def _median_us(fn: Callable[[], object], *, ops: int, rounds: int) -> float:
    for _ in range(min(ops, 200)):
        fn()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(ops):
            fn()
        per.append((time.perf_counter_ns() - t0) / ops / 1000)
    return statistics.median(per)


async def _amedian_us(fn: Callable[[], Awaitable[object]], *, ops: int, rounds: int) -> float:
    for _ in range(min(ops, 200)):
        await fn()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(ops):
            await fn()
        per.append((time.perf_counter_ns() - t0) / ops / 1000)
    return statistics.median(per)


def _knowledge_module() -> Any:
    try:
        from bastion.knowledge import engine
    except ImportError:  # the baseline's name
        from bastion.knowledge import service as engine  # type: ignore[no-redef]
    return engine


class _Counting:
    """Counts calls to a store's methods (the store object is patched in place)."""

    def __init__(self, store: Any) -> None:
        self.counts: dict[str, int] = {}
        for name in dir(type(store)):
            method = getattr(store, name, None)
            if name.startswith("_") or not callable(method) or isinstance(method, type):
                continue
            setattr(store, name, self._wrap(name, method))

    def _wrap(self, name: str, method: Any) -> Any:
        counts = self.counts

        def call(*args: Any, **kwargs: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            return method(*args, **kwargs)

        return call


async def _file_rows(quick: bool) -> dict[str, Any]:
    from bastion import LocalStore, MemoryAuditSink, Mount, Policy, Principal, Workspace
    from bastion.agents.tools import Toolset

    ops, rounds = (300, 3) if quick else (3000, 7)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-hot-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        data = ("x" * 63 + "\n") * 64  # 4 KiB, 64 lines
        (folder / "a.md").write_text(data)
        raw_path = str(folder / "a.md")

        def raw() -> bytes:
            fd = os.open(raw_path, os.O_RDONLY)
            try:
                return os.read(fd, 1 << 20)
            finally:
                os.close(fd)

        audit = MemoryAuditSink()
        store = LocalStore(folder)
        ws = Workspace(
            [Mount.of("/docs", store, "read_write")],
            policy=Policy.allow_all(),
            principal=Principal.of("bench"),
            audit=audit,
        )
        assert await ws.read_bytes("/docs/a.md") == data.encode()
        out["raw_us"] = _median_us(raw, ops=ops, rounds=rounds)
        out["read_bytes_us"] = await _amedian_us(
            lambda: ws.read_bytes("/docs/a.md"), ops=ops, rounds=rounds
        )
        out["read_text_us"] = await _amedian_us(
            lambda: ws.read_text("/docs/a.md"), ops=ops, rounds=rounds
        )
        column = [f"\n{n:>6}\t" for n in range(1, 65)]
        column[0] = column[0][1:]

        async def numbered_floor() -> str:
            rows = (await ws.read_text("/docs/a.md")).split("\n")
            rows.pop()  # the text ends with a newline
            parts = [""] * (2 * len(rows))
            parts[0::2], parts[1::2] = column[: len(rows)], rows
            return "".join(parts)

        out["floor_us"] = await _amedian_us(numbered_floor, ops=ops, rounds=rounds)
        tools = Toolset(ws)
        args = {"path": "/docs/a.md"}
        first = await tools.call("read_file", args)
        assert "x" * 63 in str(first)
        out["tool_us"] = await _amedian_us(
            lambda: tools.call("read_file", args), ops=ops, rounds=rounds
        )
        counting = _Counting(store)
        before = len(audit.records)
        await tools.call("read_file", args)
        out["tool_store_calls"] = dict(counting.counts)
        out["tool_audit_records"] = len(audit.records) - before
    return out


def _sync_rows(quick: bool) -> dict[str, Any]:
    from bastion import LocalStore, Mount, Policy, Principal, SyncWorkspace, Workspace

    ops, rounds = (300, 3) if quick else (3000, 7)
    with tempfile.TemporaryDirectory(prefix="bastion-hot-") as tmp:
        folder = Path(tmp)
        (folder / "a.md").write_text(("y" * 63 + "\n") * 64)
        ws = Workspace(
            [Mount.of("/docs", LocalStore(folder), "read_write")],
            policy=Policy.allow_all(),
            principal=Principal.of("bench"),
        )

        async def run_async() -> float:
            return await _amedian_us(lambda: ws.read_bytes("/docs/a.md"), ops=ops, rounds=rounds)

        async_us = asyncio.run(run_async())
        sync = SyncWorkspace(
            Workspace(
                [Mount.of("/docs", LocalStore(folder), "read_write")],
                policy=Policy.allow_all(),
                principal=Principal.of("bench"),
            )
        )
        try:
            sync_us = _median_us(lambda: sync.read_bytes("/docs/a.md"), ops=ops, rounds=rounds)
        finally:
            close = getattr(sync, "close", None)
            if close is not None:
                close()
    return {"async_us": async_us, "sync_us": sync_us}


async def _index_rows(quick: bool) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR
    from bastion import MemoryStore, Mount, Policy, Principal, Workspace
    from bastion.knowledge.eval import load_dataset
    from bastion.knowledge.index.memory import MemoryIndex

    engine = _knowledge_module()
    dataset = load_dataset(DEFAULT_DIR, split="test")
    corpus = {doc.doc_id: (doc.title, doc.text) for doc in dataset.iter_corpus()}
    if quick:
        corpus = dict(list(corpus.items())[:500])
    queries = dict(dataset.queries)
    store = MemoryStore()
    owner = Principal.of("owner")
    raw = Workspace([Mount.of("/s", store, "read_write")], policy=Policy.allow_all())
    for doc_id, (title, text) in corpus.items():
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        await raw.write(f"/s/{doc_id}.md", body)
    kb = engine.Knowledge(MemoryIndex(), embedder=None)
    ws = Workspace(
        [Mount.of("/s", store, "read_write")],
        policy=Policy.allow_all(),
        knowledge=kb,
        principal=owner,
    )
    t0 = time.perf_counter()
    summary = await ws.index_directory("/s")
    index_s = time.perf_counter() - t0
    assert summary.indexed == len(corpus)
    passes, means = [], []
    for _ in range(3):  # the first pass meets each term for the first time since the index
        lat = []
        for text in queries.values():
            t1 = time.perf_counter()
            kb.index.search_keyword(text, 100)
            lat.append(time.perf_counter() - t1)
        passes.append(statistics.median(lat) * 1000)
        means.append(statistics.mean(lat) * 1000)
    return {
        "index_s": index_s,
        "docs": len(corpus),
        "query_ms": passes[0],
        "query_first_mean_ms": means[0],
        "query_warm_ms": min(passes[1:]),
        "queries": len(lat),
    }


def _peer_rows(quick: bool) -> dict[str, Any]:
    import bm25s
    import Stemmer

    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR
    from bastion.knowledge.eval import load_dataset

    dataset = load_dataset(DEFAULT_DIR, split="test")
    docs = [f"{d.title} {d.text}".strip() for d in dataset.iter_corpus()]
    if quick:
        docs = docs[:500]
    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)
    index_s = time.perf_counter() - t0
    passes, means = [], []
    for _ in range(3):
        lat = []
        for text in dict(dataset.queries).values():
            t1 = time.perf_counter()
            q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
            model.retrieve(q, k=100, show_progress=False)
            lat.append(time.perf_counter() - t1)
        passes.append(statistics.median(lat) * 1000)
        means.append(statistics.mean(lat) * 1000)
    return {
        "index_s": index_s,
        "query_ms": min(passes),
        "query_mean_ms": min(means),
        "query_first_ms": passes[0],
        "query_first_mean_ms": means[0],
    }


async def _large_row(megabytes: int) -> dict[str, Any]:
    from bastion import LocalStore, Mount, Policy, Workspace
    from bastion.knowledge.index.memory import MemoryIndex

    engine = _knowledge_module()
    line = "The quick brown fox jumps over the lazy dog while auditors count the ledger.\n"
    with tempfile.TemporaryDirectory(prefix="bastion-hot-") as tmp:
        with (Path(tmp) / "large.txt").open("w") as out:  # written straight to disk: the
            for _ in range(megabytes * 1024 * 1024 // len(line)):  # guard caps writes at 10 MiB
                out.write(line)
        kb = engine.Knowledge(MemoryIndex(), embedder=None)
        ws = Workspace(
            [Mount.of("/big", LocalStore(tmp), "read_write")],
            policy=Policy.allow_all(),
            knowledge=kb,
        )
        t0 = time.perf_counter()
        summary = await ws.index_directory("/big")
        took = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        assert summary.indexed == 1, summary.format()
        assert kb.index.search_keyword("auditors ledger", 3), "the large file was not indexed"
    return {"index_s": took, "peak_rss_mb": peak}


def child(args: argparse.Namespace) -> None:
    if args.part == "files":
        result = asyncio.run(_file_rows(args.quick))
    elif args.part == "sync":
        result = _sync_rows(args.quick)
    elif args.part == "index":
        result = asyncio.run(_index_rows(args.quick))
    elif args.part == "peers":
        result = _peer_rows(args.quick)
    else:
        result = asyncio.run(_large_row(5 if args.quick else 50))
    print(json.dumps(result))


def _run_child(src: Path | None, part: str, quick: bool) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    cmd = [sys.executable, str(HERE / "hot_paths.py"), "--child", part]
    if quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{part} failed ({src or 'this tree'}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--no-peers", action="store_true", help="skip bm25s (not installed)")
    parser.add_argument("--child", dest="part")
    args = parser.parse_args()
    if args.part:
        child(args)
        return
    parts = ["files", "sync", "index"] + ([] if args.skip_large else ["large"])
    with tempfile.TemporaryDirectory(prefix="bastion-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(tree), args.baseline],
            cwd=ROOT,
            check=True,
        )
        try:
            before = {p: _run_child(tree / "src", p, args.quick) for p in parts}
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    after = {p: _run_child(ROOT / "src", p, args.quick) for p in parts}
    peers = None if args.no_peers else _run_child(None, "peers", args.quick)
    _report(before, after, peers, args)


_TIMED = (
    ("files", "raw_us", "raw os read (µs)"),
    ("files", "read_bytes_us", "read_bytes 4 KiB (µs)"),
    ("files", "read_text_us", "read_text (µs)"),
    ("files", "tool_us", "read_file tool (µs)"),
    ("sync", "sync_us", "SyncWorkspace.read_bytes (µs)"),
    ("sync", "async_us", "await Workspace.read_bytes (µs)"),
    ("index", "query_ms", "BM25 query, first pass, median (ms)"),
    ("index", "query_warm_ms", "BM25 query, terms seen, median (ms)"),
    ("index", "index_s", "index SciFact keyword-only (s)"),
)
"""Measured values compared directly, after against before (the ratio column)."""


def _report(before: dict, after: dict, peers: dict | None, args: argparse.Namespace) -> None:
    if peers is None:  # bm25s absent: its rows say so, the rest stand
        peers = {k: float("nan") for k in ("query_ms", "query_mean_ms", "query_first_ms")}
        peers |= {"query_first_mean_ms": float("nan"), "index_s": float("nan")}

    def rows(r: dict[str, Any]) -> dict[str, str]:
        f, s, i = r["files"], r["sync"], r["index"]
        out = {
            "read_bytes 4 KiB vs raw os read": (
                f"{f['read_bytes_us'] / f['raw_us']:.1f}x "
                f"({f['read_bytes_us']:.1f} vs {f['raw_us']:.1f} µs)"
            ),
            "read_file tool vs read_text": (
                f"{f['tool_us'] / f['read_text_us']:.2f}x ({f['tool_us']:.0f} vs "
                f"{f['read_text_us']:.0f} µs; store calls {f['tool_store_calls']}, "
                f"audit records {f['tool_audit_records']})"
            ),
            "read_text + split and number, no tool (the floor), vs read_text": (
                f"{f['floor_us'] / f['read_text_us']:.2f}x ({f['floor_us']:.0f} vs "
                f"{f['read_text_us']:.0f} µs)"
            ),
            "read_file tool's own work (tool less read_text)": (
                f"{f['tool_us'] - f['read_text_us']:.0f} µs, of which the floor's split and "
                f"number {f['floor_us'] - f['read_text_us']:.0f} µs"
            ),
            "SyncWorkspace vs async read_bytes": (
                f"{s['sync_us'] / s['async_us']:.2f}x "
                f"({s['sync_us']:.0f} vs {s['async_us']:.0f} µs)"
            ),
            "BM25 query vs bm25s, first pass (median)": (
                f"{i['query_ms'] / peers['query_ms']:.2f}x ({i['query_ms']:.2f} vs "
                f"{peers['query_ms']:.2f} ms)"
            ),
            "BM25 query vs bm25s, first pass (mean)": (
                f"{i['query_first_mean_ms'] / peers['query_mean_ms']:.2f}x "
                f"({i['query_first_mean_ms']:.2f} vs {peers['query_mean_ms']:.2f} ms)"
                if "query_first_mean_ms" in i
                else "not measured"
            ),
            "BM25 query vs bm25s's first pass, first pass (median)": (
                f"{i['query_ms'] / peers['query_first_ms']:.2f}x ({i['query_ms']:.2f} vs "
                f"{peers['query_first_ms']:.2f} ms)"
            ),
            "BM25 query vs bm25s's first pass, first pass (mean)": (
                f"{i['query_first_mean_ms'] / peers['query_first_mean_ms']:.2f}x "
                f"({i['query_first_mean_ms']:.2f} vs {peers['query_first_mean_ms']:.2f} ms)"
                if "query_first_mean_ms" in i
                else "not measured"
            ),
            "BM25 query vs bm25s, terms seen (median)": (
                f"{i['query_warm_ms'] / peers['query_ms']:.2f}x ({i['query_warm_ms']:.2f} vs "
                f"{peers['query_ms']:.2f} ms)"
            ),
            f"index SciFact keyword-only, {i['docs']} files": (
                f"{i['index_s']:.1f} s (bm25s {peers['index_s']:.1f} s on strings)"
            ),
        }
        if "large" in r:
            big = r["large"]
            size = 5 if args.quick else 50
            out[f"index one {size} MB text file"] = (
                f"{big['index_s']:.1f} s, {big['peak_rss_mb']:.0f} MB peak RSS"
            )
        return out

    b, a = rows(before), rows(after)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; baseline {args.baseline}, after = this tree"
    )
    print("\n| path | before | after |\n|---|---|---|")
    for name in b:
        print(f"| {name} | {b[name]} | {a[name]} |")
    print("\n| measured | before | after | after / before |\n|---|---:|---:|---:|")
    for part, key, label in _TIMED:
        was, now = before[part].get(key), after[part].get(key)
        if was is not None and now is not None:
            print(f"| {label} | {was:.2f} | {now:.2f} | {now / was:.2f} |")


if __name__ == "__main__":
    main()
