"""A read of a settled file against a read of a file changed just before (racy labels).

PYTHONPATH=src .venv/bin/python bench/racy_reads.py after   (and with the baseline's ``src``)

Medians of 15 rounds of 200 ``read_text`` calls, µs per call, of: a 4 KiB Markdown file with
front matter left alone (its labels a cache hit); the same kind of file whose stamps are moved
(``os.utime``) just before each read (its version racy: labels worked out from the head read
with the bytes, decision 0106); and the ``utime`` alone. Run it alternately against two trees.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bastion import LocalStore, Mount, Policy, Workspace

_TEXT = "---\nclassification: public\n---\n" + "line of text\n" * 300


def _per_call(fn: Callable[[], object], n: int = 200) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "a.md").write_text(_TEXT)
    (folder / "b.md").write_text(_TEXT)
    ws = Workspace([Mount.of("/d", LocalStore(folder))], policy=Policy.allow_all()).sync()
    time.sleep(0.05)  # a.md settles
    ws.read_text("/d/a.md")

    def changed() -> None:
        os.utime(folder / "b.md")
        ws.read_text("/d/b.md")

    calls: dict[str, Callable[[], object]] = {
        "settled": lambda: ws.read_text("/d/a.md"),
        "just changed": changed,
        "utime alone": lambda: os.utime(folder / "b.md"),
    }
    got: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(15):
        for name, fn in calls.items():
            got[name].append(_per_call(fn))
    label = sys.argv[1] if len(sys.argv) > 1 else "this tree"
    print(label, {name: round(statistics.median(v), 1) for name, v in got.items()}, flush=True)


if __name__ == "__main__":
    main()
