"""End-to-end SciFact indexing with embeddings, as a user runs it, timed per stage (issue 15).

    .venv/bin/python bench/index_stages.py [--baseline REV] [--warm] [--quick]

The 5,183 SciFact documents are written as Markdown files (``<id>.md``: ``# title``, a blank
line, the abstract) into a folder, and ``bastion index FOLDER --index INDEX`` runs in process
(click's ``main``, the same code as the command line): the packaged int8 MiniLM, the LanceDB
tables, a fresh index folder, so a cold embedding cache (``--warm`` keeps one cache for every
run of this script in ``bench/results/cache/index_stages.sqlite``: the non-embedding stages
alone).

The stages are timed where the indexer calls them (the functions are wrapped, nothing else is
changed): **open** (``Knowledge.open``: the model and the tables), **scan** (the walk of the
mount: ``KnowledgeLink._files``), **read** (each file's bytes, labels and type:
``KnowledgeLink._load``), **parse** (``parse_files``: labels, parse, line map, relations),
**chunk** (``chunk_whole``), **embed** (``Knowledge._embedded``: the cache and the model;
**model** is the model's share), **write** (the index writes:
``PartitionedIndex.replace_documents``). Where stages overlap in time, each stage's figure is
its busy time; **wall** is the command's; **not embedding** is wall minus the model's time.
``--baseline REV`` measures ``git archive REV src`` first with the same child (each in a fresh
process), so one command gives before and after. The machine is shared: the split is what to
compare.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _children import export_src, run_child
from _report import save_report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
STAGES = ("open", "scan", "read", "parse", "chunk", "embed", "model", "write")


class _Clock:
    """Busy seconds per stage (calls from any thread; overlapping calls of one stage count
    once, as the time at least one was running)."""

    def __init__(self) -> None:
        self.busy: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._running: dict[str, int] = dict.fromkeys(STAGES, 0)
        self._since: dict[str, float] = {}
        self._lock = threading.Lock()
        self.chunks = 0
        """Chunks handed to the index writes."""

    def enter(self, stage: str) -> None:
        with self._lock:
            if self._running[stage] == 0:
                self._since[stage] = time.perf_counter()
            self._running[stage] += 1

    def leave(self, stage: str) -> None:
        with self._lock:
            self._running[stage] -= 1
            if self._running[stage] == 0:
                self.busy[stage] += time.perf_counter() - self._since[stage]


def _sync(clock: _Clock, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        clock.enter(stage)
        try:
            return fn(*args, **kwargs)
        finally:
            clock.leave(stage)

    return timed


def _async(clock: _Clock, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        clock.enter(stage)
        try:
            return await fn(*args, **kwargs)
        finally:
            clock.leave(stage)

    return timed


def _instrument(clock: _Clock) -> None:
    import bastion.knowledge.engine as engine
    from bastion.knowledge.embedders.local import LocalEmbedder
    from bastion.knowledge.index.partitioned import PartitionedIndex
    from bastion.workspace.indexing import KnowledgeLink

    engine.Knowledge.open = classmethod(  # type: ignore[method-assign,assignment]
        _sync(clock, "open", engine.Knowledge.open.__func__)  # type: ignore[attr-defined]
    )
    KnowledgeLink._files = _async(clock, "scan", KnowledgeLink._files)  # type: ignore[method-assign]
    KnowledgeLink._load = _async(clock, "read", KnowledgeLink._load)  # type: ignore[method-assign]
    engine.parse_files = _sync(clock, "parse", engine.parse_files)  # type: ignore[attr-defined]
    engine.chunk_whole = _sync(clock, "chunk", engine.chunk_whole)  # type: ignore[attr-defined]
    engine.Knowledge._embedded = _async(clock, "embed", engine.Knowledge._embedded)  # type: ignore[method-assign]
    LocalEmbedder.embed = _async(clock, "model", LocalEmbedder.embed)  # type: ignore[method-assign]
    write = _sync(clock, "write", PartitionedIndex.replace_documents)

    def replace_documents(self: PartitionedIndex, doc_ids: Any, chunks: Any) -> Any:
        clock.chunks += len(chunks)
        return write(self, doc_ids, chunks)

    PartitionedIndex.replace_documents = replace_documents  # type: ignore[method-assign]


def _write_corpus(folder: Path, quick: bool) -> tuple[int, int]:
    sys.path.insert(0, str(HERE))
    from _scifact import DEFAULT_DIR
    from bastion.knowledge.eval import load_dataset

    corpus = list(load_dataset(DEFAULT_DIR, split="test").iter_corpus())[: 500 if quick else None]
    size = 0
    for doc in corpus:
        body = f"# {doc.title}\n\n{doc.text}\n" if doc.title else f"{doc.text}\n"
        data = body.encode("utf-8")
        (folder / f"{doc.doc_id}.md").write_bytes(data)
        size += len(data)
    return len(corpus), size


def child(args: argparse.Namespace) -> dict[str, Any]:
    from bastion.cli import main as cli

    clock = _Clock()
    _instrument(clock)
    with tempfile.TemporaryDirectory(prefix="bastion-stages-") as tmp:
        corpus = Path(tmp) / "scifact"
        corpus.mkdir()
        files, size = _write_corpus(corpus, args.quick)
        index = Path(tmp) / "index"
        argv = ["index", str(corpus), "--index", str(index)]
        if args.warm:
            # the cache file of the index folder is where Knowledge.open looks for it
            cache = RESULTS / "cache" / f"index_stages{'-quick' if args.quick else ''}.sqlite"
            cache.parent.mkdir(parents=True, exist_ok=True)
            index.mkdir()
            (index / "embeddings.sqlite").symlink_to(cache)
        started = time.perf_counter()
        try:
            cli.main(argv, standalone_mode=False)
        except SystemExit as exc:  # exit code 3 when files were skipped
            if exc.code not in (0, None):
                raise
        wall = time.perf_counter() - started
    return {"files": files, "bytes": size, "chunks": clock.chunks, "wall": wall, **clock.busy}


# -- parent ---------------------------------------------------------------------------------------


def _run_child(src: Path, args: argparse.Namespace) -> dict[str, Any]:
    flags = ["--child", *(["--quick"] if args.quick else []), *(["--warm"] if args.warm else [])]
    return run_child(__file__, src, flags, label="measuring child")


def _table(name: str, r: dict[str, Any]) -> list[str]:
    wall = r["wall"]
    rows = [
        f"\n{name}: {r['files']} files ({r['bytes'] / 1e6:.1f} MB), {r['chunks']} chunks, "
        f"wall {wall:.1f} s, of which not the model {wall - r['model']:.1f} s "
        f"({(wall - r['model']) / wall:.0%})\n",
        "| stage | seconds | share of wall |",
        "|---|---:|---:|",
    ]
    for stage in STAGES:
        label = "model (inside embed)" if stage == "model" else stage
        rows.append(f"| {label} | {r[stage]:.2f} | {r[stage] / wall:.1%} |")
    counted = sum(r[s] for s in STAGES if s != "model")
    rows.append(
        f"| other (imports, workspace, thread hops, summary) | {wall - counted:.2f} | "
        f"{(wall - counted) / wall:.1%} |"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="also measure git archive REV's src, first")
    parser.add_argument("--warm", action="store_true", help="a kept embedding cache")
    parser.add_argument("--quick", action="store_true", help="500 documents")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    lines = [
        f"bastion index, SciFact, {'warm' if args.warm else 'cold'} embedding cache; "
        f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            lines += _table(
                f"before ({args.baseline})", _run_child(export_src(args.baseline, Path(tmp)), args)
            )
        lines += _table("this tree", _run_child(ROOT / "src", args))
    text = "\n".join(lines)
    print(text)
    save_report("index_stages", text)


if __name__ == "__main__":
    main()
