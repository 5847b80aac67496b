"""The read path, before and after, from one run on one machine.

.venv/bin/python bench/read_path.py [--baseline REV] [--repeat N] [--quick]

Checks the baseline revision out into a temporary git worktree and runs the same measuring
child (this file, ``--child``) against the baseline's ``src`` and this tree's, alternately
(``--repeat`` times each; the median of each figure, and of each run's own ratios, is kept),
with the same interpreter. Within a run: medians of rounds, µs per call (in each round the
four are measured in turn, so a noisy stretch of a shared machine slows them alike), of:

* raw ``os.open/read/close`` of a 4 KiB file (64 lines) on the local disk;
* ``Workspace.read_bytes`` and ``Workspace.read_text`` of that file through a ``LocalStore``
  mount (document labels on, the default; an allow-all policy; every record goes to a sink
  that counts it);
* the ``read_file`` agent tool (``Toolset.call``) on the same file;

and, for one ``read_file`` call, the calls that reached the store object (counted on it) and
the audit records it appended. Goals (issue 11): ``read_bytes`` ≤ 2x raw; the tool ≤ 1.3x
``read_text``, one operation, one audit record.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "771880c"  # the workspace composed, before the read path was reworked

_RATIOS = [
    ("read_bytes / raw", "read_bytes_us", "raw_us"),
    ("read_file tool / read_text", "tool_us", "read_text_us"),
]
"""Ratios reported, each the median of the runs' own ratios."""

_COUNTED = ("stat", "read_range", "read_file", "entries", "list", "odd_names")


async def _interleaved(
    calls: dict[str, Callable[[], Awaitable[object] | object]], *, ops: int, rounds: int
) -> dict[str, float]:
    """Median µs per call of each of ``calls``, measured in turn within every round (so a
    noisy stretch of the machine slows all of them alike)."""
    per: dict[str, list[float]] = {name: [] for name in calls}
    for warm in (True, False):
        for _ in range(1 if warm else rounds):
            for name, fn in calls.items():
                t0 = time.perf_counter_ns()
                for _ in range(min(ops, 200) if warm else ops):
                    result = fn()
                    if inspect.isawaitable(result):
                        await result
                if not warm:
                    per[name].append((time.perf_counter_ns() - t0) / ops / 1000)
    return {name: statistics.median(values) for name, values in per.items()}


def _count_calls(store: Any) -> dict[str, int]:
    """Patch ``store``'s primitives in place to count their calls."""
    counts: dict[str, int] = {}
    for name in _COUNTED:
        method = getattr(store, name, None)
        if method is None:
            continue

        def wrap(method: Any = method, name: str = name) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                counts[name] = counts.get(name, 0) + 1
                return method(*args, **kwargs)

            return call

        setattr(store, name, wrap())
    return counts


async def _measure(quick: bool) -> dict[str, Any]:
    from bastion import LocalStore, Mount, Policy, Principal, Workspace
    from bastion.agents.tools import Toolset
    from bastion.core.audit import AuditRecord, AuditSink

    class CountingSink(AuditSink):
        """Counts records and keeps none: a growing list of records would make every later
        measurement slower (the garbage collector walks it), as a file sink does not."""

        count = 0

        def append(self, record: AuditRecord) -> None:
            self.count += 1

    ops, rounds = (300, 5) if quick else (2000, 15)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bastion-read-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        text = ("x" * 63 + "\n") * 64  # 4 KiB, 64 lines
        (folder / "a.md").write_text(text)
        raw_path = str(folder / "a.md")

        def raw() -> bytes:
            fd = os.open(raw_path, os.O_RDONLY)
            try:
                return os.read(fd, 1 << 20)
            finally:
                os.close(fd)

        audit = CountingSink()
        store = LocalStore(folder)
        ws = Workspace(
            [Mount.of("/docs", store, "read_write")],
            policy=Policy.allow_all(),
            principal=Principal.of("bench"),
            audit=audit,
        )
        assert await ws.read_bytes("/docs/a.md") == text.encode()
        tools = Toolset(ws)
        args = {"path": "/docs/a.md"}
        assert "x" * 63 in str(await tools.call("read_file", args))
        timed = await _interleaved(
            {
                "raw_us": raw,
                "read_bytes_us": lambda: ws.read_bytes("/docs/a.md"),
                "read_text_us": lambda: ws.read_text("/docs/a.md"),
                "tool_us": lambda: tools.call("read_file", args),
            },
            ops=ops,
            rounds=rounds,
        )
        out.update(timed)
        counts = _count_calls(store)
        before = audit.count
        await tools.call("read_file", args)
        out["tool_store_calls"] = dict(sorted(counts.items()))
        out["tool_audit_records"] = audit.count - before
    return out


def _run_child(src: Path, quick: bool) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child"]
    if quick:
        cmd.append("--quick")
    done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each timing's median over the runs, and each ratio's median of the runs' own ratios
    (the counts are the same in every run)."""
    out = dict(runs[0])
    for key in runs[0]:
        if key.endswith("_us"):
            out[key] = statistics.median(run[key] for run in runs)
    for name, a, b in _RATIOS:
        out[name] = statistics.median(run[a] / run[b] for run in runs)
    return out


def _table(before: dict[str, Any], after: dict[str, Any], baseline: str) -> str:
    def calls(r: dict[str, Any]) -> str:
        return ", ".join(f"{n} {name}" for name, n in r["tool_store_calls"].items()) or "none"

    rows = [
        ("raw os.open/read/close, 4 KiB", "raw_us"),
        ("Workspace.read_bytes", "read_bytes_us"),
        ("Workspace.read_text", "read_text_us"),
        ("read_file tool", "tool_us"),
    ]
    lines = [f"| path | before ({baseline}) | after |", "|---|---|---|"]
    lines += [f"| {name} | {before[key]:.1f} µs | {after[key]:.1f} µs |" for name, key in rows]
    for label, _, _ in _RATIOS:
        lines.append(f"| {label} | {before[label]:.1f}x | {after[label]:.1f}x |")
    lines.append(f"| store calls per tool call | {calls(before)} | {calls(after)} |")
    lines.append(
        f"| audit records per tool call | {before['tool_audit_records']} | "
        f"{after['tool_audit_records']} |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--repeat", type=int, default=3, help="child runs per tree, alternated")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_measure(args.quick))))
        return
    with tempfile.TemporaryDirectory(prefix="bastion-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(tree), args.baseline],
            cwd=ROOT,
            check=True,
        )
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        try:
            for _ in range(args.repeat):  # alternated, so both see the same stretches of load
                runs["before"].append(_run_child(tree / "src", args.quick))
                runs["after"].append(_run_child(ROOT / "src", args.quick))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    before, after = _median_run(runs["before"]), _median_run(runs["after"])
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus")
    print(_table(before, after, args.baseline))


if __name__ == "__main__":
    main()
