"""The overlay's read log: reading ``--files`` distinct base files through an overlay whose
memory keeps 4,096 read versions (the rest moved into the layer's shard files) against one that
keeps them all in memory, interleaved three times.

    PYTHONPATH=src python bench/overlay_reads.py [--files 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from bastion.core.paths import VPath
from bastion.stores.local import LocalStore
from bastion.stores.overlay import OverlayStore


async def run(root: Path, kept: int, n: int) -> float:
    layer = root / f"layer{kept}-{time.perf_counter_ns()}"
    layer.mkdir()
    ov = OverlayStore(LocalStore(root / "base"), LocalStore(layer), reads_kept=kept)
    start = time.perf_counter()
    for i in range(n):
        await ov.read_all(VPath.parse(f"/d{i % 100}/f{i}.txt"))
    return (time.perf_counter() - start) / n * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10000)
    n = parser.parse_args().files
    with tempfile.TemporaryDirectory() as t:
        root = Path(t)
        for i in range(n):
            d = root / "base" / f"d{i % 100}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}.txt").write_text("x\n")
        bounded, unbounded = [], []
        for _ in range(3):
            bounded.append(await run(root, 4096, n))
            unbounded.append(await run(root, 10**9, n))
        print(
            json.dumps(
                {
                    "files": n,
                    "read_ms_bounded_4096": round(statistics.median(bounded), 3),
                    "read_ms_all_in_memory": round(statistics.median(unbounded), 3),
                    "ratio": round(statistics.median(bounded) / statistics.median(unbounded), 2),
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(main())
