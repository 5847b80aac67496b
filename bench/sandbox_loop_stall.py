"""How long ``Workspace.run`` holds the event loop while it builds the view and writes a deep or
wide tree back: a ticker task sleeps 1 ms in a loop during the run and records its largest gap
(the longest stretch the loop ran nothing else), with the run's wall time beside it.

    .venv/bin/python bench/sandbox_loop_stall.py [--depths 100,256,1100] [--wide 20x100]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace

POLICY = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))
WHO = Principal.of("bench", clearance="internal")


async def _ticker(gaps: list[float], stop: asyncio.Event) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


async def _measure(label: str, command: str) -> None:
    ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=POLICY, principal=WHO)
    await ws.write("/scratch/seed.txt", "x")
    gaps: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.ensure_future(_ticker(gaps, stop))
    start = time.perf_counter()
    try:
        result = await ws.run(command, timeout=600)
        outcome = f"changed {len(result.changed):5d} refused {len(result.refused):3d}"
    except Exception as exc:
        outcome = f"raised {type(exc).__name__}"
    wall = time.perf_counter() - start
    stop.set()
    await ticker
    print(
        f"{label:28s} wall {wall:7.2f} s  longest loop stall {max(gaps) * 1000:8.1f} ms  {outcome}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depths", default="100,256,1100")
    parser.add_argument("--wide", default="20x100", help="FOLDERSxFILES")
    args = parser.parse_args()
    for depth in map(int, args.depths.split(",")):
        chain = "/".join(["d"] * depth)
        await _measure(
            f"deep {depth} folders", f"mkdir -p /scratch/{chain} && echo x > /scratch/{chain}/f"
        )
    folders, files = map(int, args.wide.split("x"))
    wide = (
        f"cd /scratch && for d in $(seq {folders}); do mkdir w$d;"
        f" for f in $(seq {files}); do echo $d $f > w$d/f$f; done; done"
    )
    await _measure(f"wide {folders}x{files} files", wide)


if __name__ == "__main__":
    asyncio.run(main())
