"""A durable write's levers measured in one process, call by call (issue 31).

A loaded machine swings from one second to the next, so two child processes (one per
revision, as ``bench/durable_writes.py`` runs them) can land in different weather. Here one
process holds three workspaces over three folders and calls them in turn, in a shuffled
order, with the raw floor beside them:

* ``now``: the write path as it is (a new name written as a creation without a look first;
  the written file's labels worked out from the bytes written);
* ``stat first``: the same, with the guard looking at the name first (a store without
  ``cached_presence``), as before this change: one more hop to a worker thread;
* ``both off``: also with the labels read back from the file after the write (the labels
  layer's write as it was);
* ``raw``: temporary file, fsync, rename, folder fsync (``bench/_peer_tree.py``).

    PYTHONPATH=src python bench/write_levers.py [--calls 300] [--no-fsync] [--op edit]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree

TEXT = ("EDITME\n" + "bastion peers benchmark line of text, 64 bytes long, writes.\n" * 70)[:4096]


async def run(calls: int, op: str) -> dict[str, list[float]]:
    from bastion import Mount, Policy, VPath, Workspace
    from bastion.labels.sidecars import refuse_unreadable
    from bastion.stores.local import LocalStore

    class StatFirst(LocalStore):
        cached_presence = None  # type: ignore[assignment]

    base = Path(tempfile.mkdtemp(prefix="levers-"))
    for name in ("now", "stat", "both", "raw"):
        (base / name).mkdir()

    def workspace(store: LocalStore) -> Workspace:
        return Workspace([Mount.of("/s", store, scope="read_write")], policy=Policy.allow_all())

    tools: dict[str, Workspace] = {
        "now": workspace(LocalStore(base / "now")),
        "stat first": workspace(StatFirst(base / "stat")),
        "both off": workspace(StatFirst(base / "both")),
    }
    guarded, _ = tools["both off"]._router.route(VPath.parse("/s/x"))
    labels: Any = guarded.inner

    async def read_back(path: VPath, data: bytes, *, mode: Any, if_version: Any = None) -> Any:
        refuse_unreadable(labels._base, labels._order, path, data)
        info = await labels.inner.write(path, data, mode=mode, if_version=if_version)
        return await labels._labelled(info)  # the head read back from the file

    labels.write = read_back
    times: dict[str, list[float]] = {name: [] for name in [*tools, "raw"]}
    order = list(times)
    shuffle = random.Random(31).shuffle
    for i in range(calls):
        name = f"f{i:06}.txt"
        shuffle(order)  # each tool before each other equally often: an fsync commits the
        for tool in order:  # filesystem's journal, the previous call's changes with it
            if tool == "raw":
                path = base / "raw" / name
                if op == "edit":
                    tree.raw_durable_write(path, TEXT.encode())
                t0 = time.perf_counter()
                data = TEXT.encode()
                if op == "edit":
                    data = path.read_bytes().replace(b"EDITME", b"EDITED", 1)
                tree.raw_durable_write(path, data)
            else:
                ws = tools[tool]
                if op == "edit":
                    await ws.write(f"/s/{name}", TEXT)
                t0 = time.perf_counter()
                if op == "edit":
                    await ws.edit(f"/s/{name}", "EDITME", "EDITED")
                else:
                    await ws.write(f"/s/{name}", TEXT)
            times[tool].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--op", choices=("write_new", "edit"), default="write_new")
    parser.add_argument("--no-fsync", action="store_true", help="os.fsync a no-op, for all")
    opts = parser.parse_args()
    if opts.no_fsync:
        os.fsync = lambda fd: None
    times = asyncio.run(run(opts.calls, opts.op))
    skip = min(20, opts.calls // 5)  # the first calls warm the pools and caches
    floor = statistics.median(times["raw"][skip:])
    print(f"{opts.op}, load average {os.getloadavg()[0]:.2f}, {opts.calls} calls each")
    for tool, got in times.items():
        med = statistics.median(got[skip:])
        print(f"  {tool:11} {med * 1e3:7.3f} ms  {med / floor:5.2f}x raw")


if __name__ == "__main__":
    main()
