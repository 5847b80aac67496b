"""What following the files across processes costs a search.

A local folder of ``--files`` Markdown files (default 2,000) indexed in a persistent
keyword-only index (``Knowledge.open``, LanceDB, one table per source). Reported, one process,
``--queries`` BM25 queries with k = 10 (median / p99, ms):

* ``engine``: ``Knowledge.search`` alone (the index call, no access filter, no check);
* ``workspace``: ``Workspace.search`` as it runs now (access filter, the index's refresh
  check, and the check of every hit against its file: one ``stat`` per document hit);
* ``workspace, hits not checked``: the same with the check of hits switched off (the
  difference is what the check costs);
* ``refresh, nothing new``: the index's refresh check alone when no other process wrote;
* ``refresh after another process wrote one file``: taking in one file written by a second
  ``Knowledge.open`` of the same folder (the time a second process needs to see it).

Run: ``.venv/bin/python bench/index_freshness.py`` (``--files N``, ``--queries N``).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from bastion import LocalStore, Mount, Policy, Workspace
from bastion.knowledge.engine import Knowledge

WORDS = [
    "falcon",
    "heron",
    "osprey",
    "kestrel",
    "plover",
    "curlew",
    "tern",
    "gannet",
    "sandpiper",
    "wren",
    "finch",
    "lark",
    "thrush",
    "robin",
    "swift",
    "martin",
    "dipper",
    "grebe",
    "egret",
    "ibis",
    "crane",
    "rail",
    "coot",
    "stilt",
    "avocet",
]


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered) * 1000:.3f} / {p99 * 1000:.3f}"


async def main(files: int, queries: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root, index = Path(tmp) / "files", Path(tmp) / "index"
        (root / "docs").mkdir(parents=True)
        for n in range(files):
            body = " ".join(rng.choice(WORDS) for _ in range(60))
            (root / "docs" / f"f{n}.md").write_text(f"# File {n}\n\n{body}\n", encoding="utf-8")
        knowledge = Knowledge.open(index, embedder=None)
        ws = Workspace(
            [Mount.of("/", LocalStore(root))], policy=Policy.allow_all(), knowledge=knowledge
        )
        started = time.perf_counter()
        await ws.reindex()
        print(f"indexed {files} files in {time.perf_counter() - started:.1f} s")
        asked = [" ".join(rng.sample(WORDS, 2)) for _ in range(queries)]
        engine, workspace, refresh = [], [], []
        for query in asked:
            t = time.perf_counter()
            await knowledge.search(query, mode="bm25", k=10)
            engine.append(time.perf_counter() - t)
            t = time.perf_counter()
            await ws.search(query, mode="bm25", k=10)
            workspace.append(time.perf_counter() - t)
            t = time.perf_counter()
            knowledge.index.refresh()
            refresh.append(time.perf_counter() - t)
        link = ws._link().checks
        unchecked = []

        async def vouch(meta: object) -> None:
            return None

        link._current = vouch  # type: ignore[method-assign,assignment]
        for query in asked:
            t = time.perf_counter()
            await ws.search(query, mode="bm25", k=10)
            unchecked.append(time.perf_counter() - t)
        del link._current
        other = Knowledge.open(index, embedder=None)
        taken = []
        for n in range(20):
            await other.index_file(f"/docs/new{n}.md", f"# New {n}\n\nzephyr {n}\n".encode())
            t = time.perf_counter()
            assert knowledge.index.refresh()
            taken.append(time.perf_counter() - t)
        other.close()
        knowledge.close()
        print(f"{'median / p99 ms':>48}")
        print(f"{'engine (Knowledge.search)':<40}{_ms(engine):>20}")
        print(f"{'workspace (refresh + check of hits)':<40}{_ms(workspace):>20}")
        print(f"{'workspace, hits not checked':<40}{_ms(unchecked):>20}")
        print(f"{'refresh, nothing new':<40}{_ms(refresh):>20}")
        print(f"{'refresh after one file elsewhere':<40}{_ms(taken):>20}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.files, args.queries))
