"""MCP server start to the first ``tools/list``: ``bastion mcp`` (stdio) against the official
MCP filesystem server (node), interleaved, over the peers tree.

    python bench/mcp_start.py [--runs 9] [--cache ~/.cache/bastion-bench/peers]

Needs the tree and the node server that ``bench/peers.py`` installs into its cache (run it
once). Prints each side's median and runs, and the ratio (Bastion over node).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def once(command: list[str]) -> float:
    """Seconds from the start of ``command`` to its answer to ``tools/list``."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert child.stdin is not None and child.stdout is not None

    def ask(message: dict[str, object], wanted: int | None) -> None:
        child.stdin.write((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        while wanted is not None and json.loads(child.stdout.readline()).get("id") != wanted:  # type: ignore[union-attr]
            pass

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, 1)
    ask({"jsonrpc": "2.0", "method": "notifications/initialized"}, None)
    ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, 2)
    took = time.perf_counter() - start
    child.stdin.close()
    child.wait(timeout=30)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/bastion-bench/peers")
    args = parser.parse_args()
    tree = args.cache / "tree"
    node = args.cache / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not tree.is_dir() or not node.exists():
        sys.exit(f"no peers cache at {args.cache}: run bench/peers.py once")
    bastion = shutil.which("bastion", path=str(Path(sys.executable).parent)) or "bastion"
    sides = {
        "bastion mcp": [bastion, "mcp", "--mount", f"/w={tree}"],
        "MCP filesystem server": [str(node), str(tree)],
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.runs):
        for name, command in sides.items():  # interleaved: load moves both alike
            times[name].append(once(command))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        runs = ", ".join(f"{t * 1000:.0f}" for t in ts)
        print(f"{name}: median {medians[name] * 1000:.0f} ms ({runs})")
    print(f"ratio: {medians['bastion mcp'] / medians['MCP filesystem server']:.2f}")


if __name__ == "__main__":
    main()
