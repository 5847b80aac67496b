"""An overlay mount's cost: a write, a read and a ``stat`` through the overlay against the same
call on a plain local mount, in one run; and ``apply`` of ``--files`` changed files into the
base folder.

    PYTHONPATH=src python bench/overlay_apply.py [--files 1000] [--writes 500] [--size 1024]

Both workspaces are made as ``bastion.toml`` makes them (``MountConfig.open``), over local
folders, every write durable: ``/plain`` a folder, ``/code`` the same kind of folder with
``overlay = "file:layers"``. Writes go over existing files (the overlay's first write of a
path copies it into the layer, later ones write the layer) and the two alternate in rounds, so
a slow moment falls on both. Reads and stats (``--reads`` of each) go to base files the layer
does not hold (the overlay's common case: the agent reads the project) and to files it holds,
alternating the same way. Apply is ``ws.overlay("/code").apply()`` (governed and audited)
after ``--files`` files were written through the overlay, each a conditional write into the
base.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from bastion import Policy, Principal, Workspace
from bastion.config import MountConfig


def _workspace(root: Path) -> Workspace:
    for name in ("plain", "code"):
        (root / name).mkdir()
        for i in range(50):
            (root / name / f"f{i}.txt").write_text("base\n")
            (root / name / f"r{i}.txt").write_text("read only\n" * 20)
    mounts = [
        MountConfig("/plain", "file:plain").open(root),
        MountConfig("/code", "file:code", overlay="file:layers").open(root),
    ]
    return Workspace(mounts, policy=Policy.allow_all(), principal=Principal.of("bench"))


async def _writes(ws: Workspace, prefix: str, n: int, size: int) -> float:
    payloads = [bytes([65 + i % 26]) * size for i in range(7)]
    start = time.perf_counter()
    for i in range(n):
        await ws.write(f"{prefix}/f{i % 50}.txt", payloads[i % 7])
    return (time.perf_counter() - start) / n


async def _reads(ws: Workspace, prefix: str, n: int, *, stat: bool) -> float:
    start = time.perf_counter()
    for i in range(n):
        path = f"{prefix}/f{i % 50}.txt" if i % 2 else f"{prefix}/r{i % 50}.txt"
        if stat:
            await ws.stat(path)
        else:
            await ws.read_bytes(path)
    return (time.perf_counter() - start) / n


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = _workspace(root)
        plain: list[float] = []
        overlay: list[float] = []
        for _ in range(args.rounds):
            plain.append(await _writes(ws, "/plain", args.writes // args.rounds, args.size))
            overlay.append(await _writes(ws, "/code", args.writes // args.rounds, args.size))
        timed: dict[str, list[float]] = {k: [] for k in ("rp", "ro", "sp", "so")}
        per = args.reads // args.rounds
        for _ in range(args.rounds):  # half the reads in the layer (f*), half in the base (r*)
            timed["rp"].append(await _reads(ws, "/plain", per, stat=False))
            timed["ro"].append(await _reads(ws, "/code", per, stat=False))
            timed["sp"].append(await _reads(ws, "/plain", per, stat=True))
            timed["so"].append(await _reads(ws, "/code", per, stat=True))
        await ws.overlay("/code").discard()
        data = b"x" * args.size
        for i in range(args.files):
            await ws.write(f"/code/new/d{i % 20}/n{i}.txt", data)
        start = time.perf_counter()
        done = await ws.overlay("/code").apply()
        took = time.perf_counter() - start
        assert len(done.applied) == args.files and not done.conflicts
        assert len(list((root / "code" / "new").rglob("*.txt"))) == args.files
    result = {
        "write_plain_ms": round(statistics.median(plain) * 1000, 2),
        "write_overlay_ms": round(statistics.median(overlay) * 1000, 2),
        "ratio": round(statistics.median(overlay) / statistics.median(plain), 2),
        **_read_results(timed),
        "apply_files": args.files,
        "apply_s": round(took, 2),
        "apply_per_file_ms": round(took / args.files * 1000, 2),
        "machine": f"{platform.machine()}, {platform.system()} {platform.release()}",
    }
    print(json.dumps(result))


def _read_results(timed: dict[str, list[float]]) -> dict[str, float]:
    med = {k: statistics.median(v) for k, v in timed.items()}
    return {
        "read_plain_ms": round(med["rp"] * 1000, 3),
        "read_overlay_ms": round(med["ro"] * 1000, 3),
        "read_ratio": round(med["ro"] / med["rp"], 2),
        "stat_plain_ms": round(med["sp"] * 1000, 3),
        "stat_overlay_ms": round(med["so"] * 1000, 3),
        "stat_ratio": round(med["so"] / med["sp"], 2),
    }


if __name__ == "__main__":
    asyncio.run(main())
