"""The glob of ``bench/peers.py`` alone (``**/*.yaml`` over the peers tree, 109 of 2,020 files):
Bastion, deepagents' ``FilesystemBackend.glob`` and the raw ``pathlib`` floor, interleaved call
by call, with the CPU each call used beside its wall-clock time (on a loaded machine the
steadier measure). deepagents runs in the environment ``bench/peers.py`` installs (run that
once first); its CPU is its worker process's, read from ``/proc``.

    PYTHONPATH=src python bench/glob_peers.py --rounds 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree
from peers import PAYLOAD, WORKER, Worker


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/bastion-bench/peers")
    opts = parser.parse_args()
    root = tree.build(opts.cache / "tree")
    python = opts.cache / "deepagents-venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit("run bench/peers.py once first: it installs deepagents")
    worker_file = opts.cache / "deepagents_worker.py"
    worker_file.write_text(WORKER)
    scratch = opts.cache / "scratch" / "deepagents"
    scratch.mkdir(parents=True, exist_ok=True)
    da = Worker([str(python), str(worker_file), str(root), str(scratch), PAYLOAD], dict(os.environ))

    from bastion import Mount, Policy, Workspace
    from bastion.stores.local import LocalStore

    ws = Workspace([Mount.of("/w", LocalStore(root))], policy=Policy.allow_all())
    wall: dict[str, list[float]] = {"bastion": [], "deepagents": [], "raw": []}
    cpu: dict[str, list[float]] = {"bastion": [], "deepagents": [], "raw": []}

    async def run() -> None:
        found = await ws.glob("**/*.yaml", path="/w")
        assert len(found) == tree.YAML_FILES, len(found)
        da.call(op="glob", pattern="**/*.yaml")
        for r in range(opts.rounds):
            for tool in ("bastion", "deepagents", "raw")[r % 3 :] + (
                "bastion",
                "deepagents",
                "raw",
            )[: r % 3]:
                if tool == "deepagents":
                    c0 = _cpu(da.proc.pid)
                    wall[tool].append(da.call(op="glob", pattern="**/*.yaml"))
                    cpu[tool].append(_cpu(da.proc.pid) - c0)
                    continue
                c0 = time.process_time()
                t0 = time.perf_counter()
                if tool == "bastion":
                    await ws.glob("**/*.yaml", path="/w")
                else:
                    list(root.glob("**/*.yaml"))
                wall[tool].append(time.perf_counter() - t0)
                cpu[tool].append(time.process_time() - c0)

    try:
        asyncio.run(run())
    finally:
        da.close()
    med = {tool: statistics.median(v) * 1e3 for tool, v in wall.items()}
    mean_cpu = {tool: statistics.fmean(v) * 1e3 for tool, v in cpu.items()}
    print(f"{'tool':11} {'median ms':>10} {'CPU ms/call':>12}")
    for tool in wall:
        print(f"{tool:11} {med[tool]:10.2f} {mean_cpu[tool]:12.2f}")
    print(
        f"bastion/raw: wall {med['bastion'] / med['raw']:.2f}, CPU "
        f"{mean_cpu['bastion'] / mean_cpu['raw']:.2f}; bastion/deepagents: wall "
        f"{med['bastion'] / med['deepagents']:.2f}, CPU "
        f"{mean_cpu['bastion'] / mean_cpu['deepagents']:.2f}"
    )
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
