"""A page of lines from deep in a large file, before and after each further chunk of the page
was read on condition of the first chunk's version (the red team of lost updates: a page is
whole from one version).

.venv/bin/python bench/page_chunks.py [--baseline REV] [--repeat N]

Exports the baseline revision's ``src`` (``bench/_children.py``) and runs the same measuring
child (this file, ``--child``) against the baseline's ``src`` and this tree's, alternately
(``--repeat`` times each; medians kept), with the same interpreter. The child writes a 4 MiB
text file (80-byte lines) on a ``LocalStore`` mount (document labels on, an allow-all
policy) and times, as medians of rounds in µs per call, ``Workspace.read_lines`` of 100
lines from the start (one chunk: unchanged), from the middle (32 chunks read) and from the
end (64 chunks read), and a small file's 64-line page for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _children import ROOT, export_src, run_child

BASELINE = "518d59f~1"  # the page reader before its further chunks were checked
LINES = 4 * 1024 * 1024 // 80

_CASES = ("small_us", "start_us", "middle_us", "end_us")


async def _measure(rounds: int) -> dict[str, float]:
    from bastion import LocalStore, Mount, Policy, Principal, Workspace

    with tempfile.TemporaryDirectory() as tmp:
        with (Path(tmp) / "big.txt").open("w") as out:
            for i in range(LINES):
                out.write(f"{'x' * 71} {i:07d}\n")
        (Path(tmp) / "small.txt").write_text("".join(f"line {i}\n" for i in range(64)))
        ws = Workspace(
            [Mount.of("/m", LocalStore(tmp))],
            policy=Policy.allow_all(),
            principal=Principal.of("a"),
        )
        calls = {
            "small_us": lambda: ws.read_lines("/m/small.txt", offset=0, limit=100),
            "start_us": lambda: ws.read_lines("/m/big.txt", offset=0, limit=100),
            "middle_us": lambda: ws.read_lines("/m/big.txt", offset=LINES // 2, limit=100),
            "end_us": lambda: ws.read_lines("/m/big.txt", offset=LINES - 100, limit=100),
        }
        ops = {"small_us": 200, "start_us": 200, "middle_us": 5, "end_us": 5}
        per: dict[str, list[float]] = {name: [] for name in calls}
        for warm in (True, False):
            for _ in range(1 if warm else rounds):
                for name, fn in calls.items():  # in turn, so a noisy stretch slows all alike
                    started = time.perf_counter()
                    for _ in range(ops[name]):
                        await fn()
                    if not warm:
                        per[name].append((time.perf_counter() - started) / ops[name] * 1e6)
        return {name: statistics.median(values) for name, values in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--repeat", type=int, default=3, help="child runs per tree, alternated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.rounds))))
        return
    child = ["--child", "--rounds", str(args.rounds)]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bastion-baseline-") as tmp:
        before_src = export_src(args.baseline, Path(tmp))
        for _ in range(args.repeat):  # alternated, so both see the same stretches of load
            runs["before"].append(run_child(__file__, before_src, child, label="before"))
            runs["after"].append(run_child(__file__, ROOT / "src", child, label="after"))
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus")
    print(f"| read_lines, 100 lines | before ({args.baseline}) | after | after / before |")
    print("|---|---|---|---|")
    for name in _CASES:
        before = statistics.median(r[name] for r in runs["before"])
        after = statistics.median(r[name] for r in runs["after"])
        ratio = statistics.median(
            a[name] / b[name] for a, b in zip(runs["after"], runs["before"], strict=True)
        )
        print(f"| {name[:-3]} | {before:.0f} µs | {after:.0f} µs | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
