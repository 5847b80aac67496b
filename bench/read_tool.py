"""The ``read_file`` tool against ``Workspace.read_text`` of the same file, and the tool's time
broken into its parts (issue 11, row 2 of ``bench/hot_paths.py``, measured closer).

.venv/bin/python bench/read_tool.py [--rounds N] [--ops N]

The set-up is row 2's: a 4 KiB file of 64 lines on a local store, an allow-all policy, a
memory audit sink. The tool (``Toolset.call("read_file", {"path": ...})``) and ``read_text``
are timed interleaved, round by round (``ops`` calls each per round), and the ratio is that of
their medians. Then each layer of the tool is timed the same way, from the inside out, so the
difference between two consecutive rows is what that layer adds:

- ``Workspace.read_lines``: the one read operation the tool makes (parse, route, guard,
  store, audit);
- ``ToolSession.read_lines``: plus the read tracker;
- ``read_page``: plus the binary check, the split into rows, numbering and the output;
- ``read_file.fn``: the tool's function called directly with its arguments;
- ``Tool.parse``: argument validation alone (not nested in the rows above);
- ``Toolset.call``: the whole call (lookup, validation, approval, the function).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from bastion import LocalStore, MemoryAuditSink, Mount, Policy, Principal, Workspace  # noqa: E402
from bastion.agents.tools import Toolset  # noqa: E402
from bastion.agents.tools.granular import read_file, read_page  # noqa: E402
from bastion.core.paths import VPath  # noqa: E402

Timed = Callable[[], Awaitable[object]]


CLOCK = time.perf_counter_ns


async def _per_call_us(fn: Timed, ops: int) -> float:
    t0 = CLOCK()
    for _ in range(ops):
        await fn()
    return (CLOCK() - t0) / ops / 1000


async def _interleaved(named: dict[str, Timed], *, ops: int, rounds: int) -> dict[str, float]:
    """Median µs per call of each function, timed round by round in turn."""
    for fn in named.values():
        await _per_call_us(fn, min(ops, 200))
    per: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(rounds):
        for name, fn in named.items():
            per[name].append(await _per_call_us(fn, ops))
    return {name: statistics.median(times) for name, times in per.items()}


async def main(ops: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bastion-read-tool-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        (folder / "a.md").write_text(("x" * 63 + "\n") * 64)  # 4 KiB, 64 lines
        audit = MemoryAuditSink()
        ws = Workspace(
            [Mount.of("/docs", LocalStore(folder), "read_write")],
            policy=Policy.allow_all(),
            principal=Principal.of("bench"),
            audit=audit,
        )
        tools = Toolset(ws)
        session = tools.session
        path = "/docs/a.md"
        read_path = VPath.parse(path)
        args = {"path": path}
        before = len(audit.records)
        out = await tools.call("read_file", args)
        assert out["success"] and len(audit.records) - before == 1, out

        async def parse() -> object:
            return read_file.parse(args)

        rows: dict[str, Timed] = {
            "Workspace.read_text": lambda: ws.read_text(path),
            "Workspace.read_lines": lambda: ws.read_lines(path, offset=0, limit=500),
            "ToolSession.read_lines": lambda: session.read_lines(read_path, 0, 500),
            "read_page": lambda: read_page(session, path, 0, None),
            "read_file.fn": lambda: read_file.fn(session, path=path, offset=0, limit=None),
            "Tool.parse": parse,
            "Toolset.call": lambda: tools.call("read_file", args),
        }
        us = await _interleaved(rows, ops=ops, rounds=rounds)

    base = us["Workspace.read_text"]
    clock = "CPU time" if CLOCK is time.process_time_ns else "wall clock"
    print(
        f"python {platform.python_version()} on {platform.machine()}; {rounds} rounds x {ops}; "
        f"{clock}"
    )
    print(f"{'row':<24} {'µs':>7} {'x read_text':>12} {'adds µs':>8}")
    previous = None
    for name, value in us.items():
        adds = "" if previous is None or name == "Tool.parse" else f"{value - previous:8.1f}"
        print(f"{name:<24} {value:7.1f} {value / base:11.2f}x {adds:>8}")
        if name != "Tool.parse":
            previous = value
    print(f"read_file tool vs read_text: {us['Toolset.call'] / base:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--cpu", action="store_true", help="time this process's CPU time, not the wall clock"
    )
    ns = parser.parse_args()
    if ns.cpu:
        CLOCK = time.process_time_ns
    asyncio.run(main(ns.ops, ns.rounds))
