"""What hiding folders of hidden entries costs a listing.

A folder that holds nothing the principal may see is not listed (docs/security.md), so a
listing looks into each subfolder until its first visible entry. This lists a folder of 100
subfolders of 10 files each, with the check and with it switched off, on the memory and the
local store, and prints the medians of 20 runs.

    .venv/bin/python bench/list_hidden_folders.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

import bastion.core.hidden_tree as hidden_tree
from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Store, Workspace


async def median_list(ws: Workspace, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await ws.list("/d")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main() -> None:
    print("| store | with the folder check (ms) | without (ms) | ratio |")
    print("|---|---:|---:|---:|")
    for name in ("memory", "local"):
        store: Store = MemoryStore() if name == "memory" else LocalStore(tempfile.mkdtemp())
        ws = Workspace(
            [Mount.of("/d", store)],
            policy=Policy.allow_all(),
            principal=Principal.of("u", clearance="restricted"),
        )
        for i in range(100):
            for j in range(10):
                await ws.write(f"/d/f{i:03d}/x{j}.txt", "x")
        on = await median_list(ws)
        shown = hidden_tree.shown_dir

        async def always(*_: Any) -> bool:
            return True

        hidden_tree.shown_dir = always  # type: ignore[assignment]
        try:
            off = await median_list(ws)
        finally:
            hidden_tree.shown_dir = shown
        print(f"| {name} | {on * 1e3:.2f} | {off * 1e3:.2f} | {on / off:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
