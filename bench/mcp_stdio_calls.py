"""One MCP call over stdio, in one process (issue 31): the server reading and writing on the
event loop (pipes) against the same server reading and writing in threads; or, with
``--base REV``, this tree's server against another revision's, on pipes.

A ``StdioServer`` over a workspace of the peers tree runs on two OS pipes in a thread of this
process; the client writes one request and reads its answer, ``--calls`` times per session
(the first 20 left out of the median). The calls: ``list_files`` of the folder of 50 files,
``read_file`` of 100 lines of a 15 KB file, and ``ping`` (the protocol alone). Beside the
wall-clock median, the CPU per call of the whole process (client, server and worker threads;
the client's share is the same for both sides): on a loaded machine the steadier figure.

    PYTHONPATH=src python bench/mcp_stdio_calls.py --rounds 4
    PYTHONPATH=src python bench/mcp_stdio_calls.py --base main --rounds 6

With ``--base``, each round runs one child process per revision (alternating which goes
first), each child one session per call; medians over the rounds, and the ratio after/before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree
from _children import before_after

METHODS = ("list", "read", "ping")


def session(root: Path, mode: str, method: str, calls: int) -> tuple[float, float]:
    """Median ms of one request and its answer in one server session, and the process's
    CPU ms per call."""
    from bastion import Mount, Policy, Workspace
    from bastion.agents import mcp_stdio
    from bastion.agents.tools.toolset import Toolset
    from bastion.stores.local import LocalStore

    on_pipes = mcp_stdio._pipes

    async def threads(*_: Any) -> None:
        return None  # the server then reads and writes in threads

    mcp_stdio._pipes = on_pipes if mode == "pipes" else threads  # type: ignore[assignment]
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    ws = Workspace([Mount.of("/w", LocalStore(root))], policy=Policy.allow_all())
    server = mcp_stdio.StdioServer(
        Toolset(ws), stdin=os.fdopen(r_in, "rb"), stdout=os.fdopen(w_out, "wb")
    )
    serving = threading.Thread(target=lambda: asyncio.run(server.serve()))
    serving.start()
    to_server, answers = os.fdopen(w_in, "wb"), os.fdopen(r_out, "rb")
    if method == "list":
        params = {"name": "list_files", "arguments": {"path": f"/w/{tree.LIST_FOLDER}"}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    elif method == "read":
        page = next(n for n in tree.names() if n.endswith(".md"))
        params = {"name": "read_file", "arguments": {"path": f"/w/{page}", "limit": 100}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    else:
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    data = json.dumps(message).encode() + b"\n"
    times = []
    cpu = 0.0
    for n in range(calls):
        c0 = time.process_time()
        t0 = time.perf_counter()
        to_server.write(data)
        to_server.flush()
        answer = answers.readline()
        times.append(time.perf_counter() - t0)
        if n >= 20:
            cpu += time.process_time() - c0
        if b'"isError":true' in answer or b'"error"' in answer[:60]:
            raise SystemExit(f"the call failed: {answer[:300]!r}")
    to_server.close()
    serving.join()
    answers.close()
    return statistics.median(times[20:]) * 1e3, cpu / (calls - 20) * 1e3


def child(root: Path, calls: int) -> dict[str, list[float]]:
    return {m: list(session(root, "pipes", m, calls)) for m in METHODS}


def compare(opts: argparse.Namespace, root: Path) -> None:
    args = ["--child", "--calls", str(opts.calls), "--tree", str(opts.tree)]
    got: dict[str, list[dict[str, list[float]]]] = before_after(
        __file__, opts.base, args, rounds=opts.rounds, prefix="mcp-calls-src-"
    )
    print(
        f"{'call':6} {'before ms':>10} {'after ms':>9} {'after/before':>13} "
        f"{'cpu before':>11} {'cpu after':>10} {'cpu after/before':>17}"
    )
    for m in METHODS:
        wall = {k: statistics.median(x[m][0] for x in v) for k, v in got.items()}
        cpu = {k: statistics.median(x[m][1] for x in v) for k, v in got.items()}
        print(
            f"{m:6} {wall['before']:10.3f} {wall['after']:9.3f} "
            f"{wall['after'] / wall['before']:13.2f} {cpu['before']:11.3f} "
            f"{cpu['after']:10.3f} {cpu['after'] / cpu['before']:17.2f}"
        )
    print(f"load average: {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--base", help="compare this tree's server with this revision's")
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "peer-tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    root = tree.build(opts.tree)
    if opts.child:
        print(json.dumps(child(root, opts.calls)))
        return
    if opts.base:
        compare(opts, root)
        return
    got: dict[tuple[str, str], list[float]] = {}
    for _ in range(opts.rounds):
        for mode in ("pipes", "threads"):
            for method in METHODS:
                wall, _cpu = session(root, mode, method, opts.calls)
                got.setdefault((mode, method), []).append(wall)
    for (mode, method), values in got.items():
        runs = ", ".join(f"{v:.3f}" for v in values)
        print(f"{mode:8} {method:5} median {statistics.median(values):.3f} ms ({runs})")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
