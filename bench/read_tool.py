"""The ``read_file`` tool against ``Workspace.read_text`` of the same file, and the tool's time
broken into its parts (issue 11, row 2 of ``bench/hot_paths.py``, measured closer).

.venv/bin/python bench/read_tool.py [--rounds N] [--ops N] [--cpu] [--baseline REV [--runs N]]

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

With ``--baseline REV`` the revision is checked out into a temporary git worktree and this
script (the measuring child) runs against its ``src`` and this tree's in turn, ``--runs``
times each (baseline, this tree, baseline, ...), with the same interpreter and packages; the
report gives each side's median per row over the runs, and the median of the runs' ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Timed = Callable[[], Awaitable[object]]


Clock = Callable[[], int]


async def _per_call_us(fn: Timed, ops: int, clock: Clock) -> float:
    t0 = clock()
    for _ in range(ops):
        await fn()
    return (clock() - t0) / ops / 1000


async def _interleaved(
    named: dict[str, Timed], *, ops: int, rounds: int, clock: Clock
) -> dict[str, float]:
    """Median µs per call of each function, timed round by round in turn."""
    for fn in named.values():
        await _per_call_us(fn, min(ops, 200), clock)
    per: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(rounds):
        for name, fn in named.items():
            per[name].append(await _per_call_us(fn, ops, clock))
    return {name: statistics.median(times) for name, times in per.items()}


async def measure(ops: int, rounds: int, clock: Clock) -> dict[str, float]:
    """Median µs per call of each row, in this process (``bastion`` from ``sys.path``)."""
    from bastion import LocalStore, MemoryAuditSink, Mount, Policy, Principal, Workspace
    from bastion.agents.tools import Toolset
    from bastion.agents.tools.granular import read_file, read_page
    from bastion.core.paths import VPath

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
        return await _interleaved(rows, ops=ops, rounds=rounds, clock=clock)


def _table(columns: dict[str, dict[str, float]]) -> None:
    """Each row in µs for each column, and what it adds to the row above it."""
    names = list(next(iter(columns.values())))
    head = "".join(f" {c:>14} {'adds':>6}" for c in columns)
    print(f"{'row':<24}{head}")
    previous: dict[str, float] = {}
    for name in names:
        cells = []
        for column, us in columns.items():
            value = us[name]
            before = previous.get(column)
            adds = "" if before is None or name == "Tool.parse" else f"{value - before:6.1f}"
            cells.append(f" {value:14.1f} {adds:>6}")
            if name != "Tool.parse":
                previous[column] = value
        print(f"{name:<24}{''.join(cells)}")
    for column, us in columns.items():
        ratio = us["Toolset.call"] / us["Workspace.read_text"]
        print(f"{column}: read_file tool vs read_text {ratio:.2f}x")


def _child(src: Path, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child"]
    cmd += ["--ops", str(args.ops), "--rounds", str(args.rounds)] + (["--cpu"] if args.cpu else [])
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the child failed ({src}):\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _compare(args: argparse.Namespace) -> None:
    runs: dict[str, list[dict[str, float]]] = {args.baseline: [], "this tree": []}
    with tempfile.TemporaryDirectory(prefix="bastion-read-tool-base-") as tmp:
        tree = Path(tmp) / "tree"
        git = ["git", "worktree"]
        subprocess.run(
            [*git, "add", "--detach", "-q", str(tree), args.baseline], cwd=ROOT, check=True
        )
        try:
            for _ in range(args.runs):
                runs[args.baseline].append(_child(tree / "src", args))
                runs["this tree"].append(_child(ROOT / "src", args))
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], cwd=ROOT, check=False)
    medians = {
        side: {row: statistics.median(r[row] for r in results) for row in results[0]}
        for side, results in runs.items()
    }
    _header(args)
    print(f"{args.runs} runs per side, alternating; each cell the median of the runs")
    _table(medians)
    for side, results in runs.items():
        ratios = [r["Toolset.call"] / r["Workspace.read_text"] for r in results]
        shown = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"{side}: ratio per run {shown}; median {statistics.median(ratios):.2f}x")


def _header(args: argparse.Namespace) -> None:
    clock = "CPU time" if args.cpu else "wall clock"
    print(
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
        f"{args.rounds} rounds x {args.ops} calls per row, interleaved; {clock}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cpu", action="store_true", help="time CPU time, not the wall clock")
    parser.add_argument("--baseline", help="a revision to compare with (a git worktree)")
    parser.add_argument("--runs", type=int, default=3, help="runs per side with --baseline")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        _compare(args)
        return
    if not args.child:
        sys.path.insert(0, str(ROOT / "src"))
    clock = time.process_time_ns if args.cpu else time.perf_counter_ns
    us = asyncio.run(measure(args.ops, args.rounds, clock))
    if args.child:
        print(json.dumps(us))
        return
    _header(args)
    _table({"µs": us})


if __name__ == "__main__":
    main()
