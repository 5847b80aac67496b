"""``bastion eval``'s run: Bastion's own search scored on a BEIR dataset. The corpus becomes
files in a scratch workspace, indexed by the same pipeline as any file (parse, chunk, embed,
index), and every query runs through ``Workspace.search``. A document scores its best chunk.

It composes a store, the workspace and the knowledge engine, so it sits at the top with the
command that runs it; ``bastion.knowledge.eval`` (datasets, metrics, run records) imports
nothing above the knowledge package (``docs/architecture.md``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote

from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.eval.beir import load_dataset
from bastion.knowledge.eval.run import RunRecord, run_retrieval
from bastion.stores.memory import MemoryStore
from bastion.workspace.workspace import Workspace

__all__ = ["evaluate_workspace"]

_PREFIX = "/corpus/"


def _file(doc_id: str) -> str:
    return f"{_PREFIX}{quote(doc_id, safe='')}.md"


def _doc_id(path: str) -> str:
    return unquote(path[len(_PREFIX) : -3])


def evaluate_workspace(
    root: str | Path,
    *,
    mode: str = "hybrid",
    split: str = "test",
    index_dir: str | Path,
    limit: int | None = None,
    k: int = 100,
    echo: Callable[[str], None] | None = None,
    index_progress: Callable[[int, int, str], None] | None = None,
    query_progress: Callable[[int, int, str], None] | None = None,
) -> RunRecord:
    """Index the dataset's corpus in ``index_dir`` and score ``mode`` on its queries;
    ``index_progress`` and ``query_progress`` are told ``(done, total, what)`` as they go."""
    say = echo or (lambda _line: None)
    dataset = load_dataset(root, split=split)
    knowledge = Knowledge.open(index_dir, embedder=None if mode == "bm25" else "local")
    store = MemoryStore()
    mounts = [Mount.of("/corpus", store, "read_write")]
    raw = Workspace(mounts, policy=Policy.allow_all()).sync()
    count = 0
    for doc in dataset.iter_corpus():
        if limit is not None and count >= limit:
            break
        body = f"# {doc.title}\n\n{doc.text}\n" if doc.title else f"{doc.text}\n"
        raw.write(_file(doc.doc_id), body)
        count += 1
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=knowledge).sync()
    say(f"indexing {count} documents ({mode})...")
    started = time.perf_counter()
    summary = ws.index_directory("/corpus", progress=index_progress)
    took = time.perf_counter() - started
    say(summary.format().splitlines()[0])

    asked = [0]
    total = len(dataset.queries)

    def search(text: str) -> list[str]:
        hits = ws.search(text, mode=mode, k=k).hits
        asked[0] += 1
        if query_progress is not None:
            query_progress(asked[0], total, text)
        return list(dict.fromkeys(_doc_id(h.path) for h in hits))

    record = run_retrieval(
        dataset,
        search,
        k=k,
        mode=mode,
        settings={"documents": count, "fusion": knowledge.fusion, "index_seconds": took},
    )
    knowledge.close()
    return record
