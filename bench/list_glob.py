"""Listing, glob and a page read over the peers tree, this tree against another revision.

Runs the Bastion calls of ``bench/peers.py`` that list and read (``**/*.yaml`` glob, a folder
of 50 files listed, 100 lines of a 15 KB file read, and that folder listed over MCP stdio by
``bastion mcp``, one JSON-RPC request at a time) and the raw Python floor of each, in child
processes: one child per revision and round, alternating, so both see the same load. Prints
the median of each, and the ratios (after/before, and each against the raw floor). The MCP
floor is the same listing done raw (no server). Beside the wall-clock medians, the CPU each
call used (the process's own, worker threads included; for MCP the server process's): on a
loaded machine the steadier measure of the work a call does.

    PYTHONPATH=src python bench/list_glob.py --base main --rounds 7
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree
from _children import before_after

OPS = ("glob", "list_folder", "read_page", "mcp_list")


class McpClient:
    """``bastion mcp`` over stdio, spoken directly (newline-delimited JSON-RPC)."""

    def __init__(self, root: Path) -> None:
        cmd = [sys.executable, "-m", "bastion.cli", "mcp", "--mount", f"/w={root}"]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        answer = json.loads(self.proc.stdout.readline())
        if "result" not in answer:
            raise SystemExit(f"MCP call failed: {answer}")
        return dict(answer["result"])

    def cpu(self) -> float:
        """Seconds of CPU the server process has used (user and system, from ``/proc``)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def child(root: Path, repeat: int, ops: list[str]) -> dict[str, dict[str, float]]:
    """One round in this process: each op ``repeat`` times, Bastion and raw alternating."""
    from bastion import Mount, Policy, Workspace
    from bastion.stores.local import LocalStore

    ws = Workspace([Mount.of("/w", LocalStore(root))], policy=Policy.allow_all())
    page = next(n for n in tree.names() if n.endswith(".md"))
    folder = root / tree.LIST_FOLDER
    mcp = McpClient(root) if "mcp_list" in ops else None

    async def bastion(op: str) -> None:
        if op == "glob":
            await ws.glob("**/*.yaml", path="/w")
        elif op == "list_folder":
            await ws.list(f"/w/{tree.LIST_FOLDER}")
        elif op == "read_page":
            await ws.read_lines(f"/w/{page}", limit=100)
        else:
            assert mcp is not None
            arguments = {"path": f"/w/{tree.LIST_FOLDER}"}
            got = mcp.ask("tools/call", {"name": "list_files", "arguments": arguments})
            assert not got["isError"], got

    raws: dict[str, Callable[[], object]] = {
        "glob": lambda: list(root.glob("**/*.yaml")),
        "list_folder": lambda: [e.stat() for e in os.scandir(folder)],
        "read_page": lambda: (root / page).read_text().splitlines()[:100],
        "mcp_list": lambda: [e.stat() for e in os.scandir(folder)],
    }

    async def run() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for op in ops:
            await bastion(op)  # warm: caches, compiled pattern
            b: list[float] = []
            r: list[float] = []
            cpu = 0.0
            for _ in range(repeat):
                c0 = mcp.cpu() if op == "mcp_list" and mcp else time.process_time()
                t0 = time.perf_counter()
                await bastion(op)
                b.append(time.perf_counter() - t0)
                cpu += (mcp.cpu() if op == "mcp_list" and mcp else time.process_time()) - c0
                t0 = time.perf_counter()
                raws[op]()
                r.append(time.perf_counter() - t0)
            out[op] = {
                "bastion": statistics.median(b),
                "raw": statistics.median(r),
                "cpu": cpu / repeat,
            }
        return out

    try:
        return asyncio.run(run())
    finally:
        if mcp is not None:
            mcp.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=21, help="calls per op in one child")
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "peer-tree")
    parser.add_argument("--ops", default=",".join(OPS), help="which of " + ", ".join(OPS))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    root = tree.build(opts.tree)
    if opts.child:
        print(json.dumps(child(root, opts.repeat, opts.ops.split(","))))
        return
    args = ["--child", "--repeat", str(opts.repeat), "--tree", str(opts.tree)]
    args += ["--ops", opts.ops]
    got: dict[str, list[dict[str, dict[str, float]]]] = before_after(
        __file__, opts.base, args, rounds=opts.rounds, prefix="list-glob-src-"
    )
    print(
        f"{'op':12} {'before ms':>10} {'after ms':>9} {'raw ms':>7} {'after/before':>13} "
        f"{'before/raw':>11} {'after/raw':>10} {'cpu before':>11} {'cpu after':>10}"
    )
    for op in opts.ops.split(","):
        med = {label: statistics.median(x[op]["bastion"] for x in got[label]) for label in got}
        cpu = {label: statistics.median(x[op]["cpu"] for x in got[label]) for label in got}
        floor = statistics.median(x[op]["raw"] for label in got for x in got[label])
        print(
            f"{op:12} {med['before'] * 1e3:10.3f} {med['after'] * 1e3:9.3f} {floor * 1e3:7.3f} "
            f"{med['after'] / med['before']:13.2f} {med['before'] / floor:11.1f} "
            f"{med['after'] / floor:10.1f} {cpu['before'] * 1e3:11.3f} {cpu['after'] * 1e3:10.3f}"
        )
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
