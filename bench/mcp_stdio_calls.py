"""One MCP call over stdio, the server reading and writing on the event loop (pipes) against
the same server reading and writing in threads, in one process (issue 31).

A ``StdioServer`` over a workspace of the peers tree runs on two OS pipes in a thread of this
process; the client writes one request and reads its answer, ``--calls`` times per session
(the first 20 left out of the median). Sessions alternate between the two modes, ``--rounds``
times each, for ``list_files`` of the folder of 50 files and for ``ping`` (the protocol alone).

    PYTHONPATH=src python bench/mcp_stdio_calls.py --rounds 4
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
from bastion import Mount, Policy, Workspace
from bastion.agents import mcp_stdio
from bastion.agents.tools.toolset import Toolset
from bastion.stores.local import LocalStore

_ON_PIPES = mcp_stdio._pipes


async def _threads(*_: Any) -> None:
    return None  # the server then reads and writes in threads


def session(root: Path, mode: str, method: str, calls: int) -> float:
    """Median ms of one request and its answer, in one server session."""
    mcp_stdio._pipes = _ON_PIPES if mode == "pipes" else _threads  # type: ignore[assignment]
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
        arguments = {"path": f"/w/{tree.LIST_FOLDER}"}
        params = {"name": "list_files", "arguments": arguments}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    else:
        message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    data = json.dumps(message).encode() + b"\n"
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        to_server.write(data)
        to_server.flush()
        answers.readline()
        times.append(time.perf_counter() - t0)
    to_server.close()
    serving.join()
    answers.close()
    return statistics.median(times[20:]) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "peer-tree")
    opts = parser.parse_args()
    root = tree.build(opts.tree)
    got: dict[tuple[str, str], list[float]] = {}
    for _ in range(opts.rounds):
        for mode in ("pipes", "threads"):
            for method in ("list", "ping"):
                got.setdefault((mode, method), []).append(session(root, mode, method, opts.calls))
    for (mode, method), values in got.items():
        runs = ", ".join(f"{v:.3f}" for v in values)
        print(f"{mode:8} {method:5} median {statistics.median(values):.3f} ms ({runs})")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
