"""Durable write, edit, move and delete of a 4 KiB file: this tree against another revision,
and both against the raw floor (issue 31: within 1.3x of raw write + fsync + rename).

Runs ``Workspace.write`` (a new file), ``edit``, ``move`` and ``delete`` on a ``LocalStore``
mount, and the raw floor of each (``bench/_peer_tree.py``: temporary file, fsync, rename,
folder fsync; read then the same for an edit; rename or unlink then folder fsync for a move
or a delete), in child processes: one child per revision and round, alternating, so both see
the same load. Within a child, Bastion and the raw floor alternate call by call. Prints the
median of each, and the ratios (after/before, and each against the raw floor).

    PYTHONPATH=src python bench/durable_writes.py --base HEAD~1 --rounds 7

``--journal`` turns the change journal on for the Bastion mount (it is off by default, as in
``bench/peers.py``). ``--no-fsync`` replaces ``os.fsync`` with a no-op in the children, for
Bastion and the floor alike: what is left is the software's own cost, without the disk's
(whose fsync time swings with every other writer of a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree
from _children import before_after

OPS = ("write_new", "edit", "move", "delete")
TEXT = ("EDITME\n" + "bastion peers benchmark line of text, 64 bytes long, writes.\n" * 70)[:4096]
PAYLOAD = TEXT.encode()


def child(scratch: Path, repeat: int, journal: bool) -> dict[str, dict[str, float]]:
    """One round in this process: each op ``repeat`` times, Bastion and raw alternating."""
    from bastion import Mount, Policy, Workspace
    from bastion.stores.local import LocalStore

    for sub in ("b", "r"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    extra = {}
    if journal:
        from bastion.workspace.journal import Journal

        extra["journal"] = Journal(scratch / "journal.db")
    ws = Workspace(
        [Mount.of("/s", LocalStore(scratch / "b"), scope="read_write")],
        policy=Policy.allow_all(),
        **extra,  # type: ignore[arg-type]
    )
    counter = [0]

    def name() -> str:
        counter[0] += 1
        return f"f{counter[0]:06}.txt"

    def since(start: tuple[float, float]) -> tuple[float, float]:
        return time.perf_counter() - start[0], time.process_time() - start[1]

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    async def bastion(op: str) -> tuple[float, float]:
        path = f"/s/{name()}"
        if op == "write_new":
            t0 = now()
            await ws.write(path, TEXT)
            return since(t0)
        await ws.write(path, TEXT)
        t0 = now()
        if op == "edit":
            await ws.edit(path, "EDITME", "EDITED")
        elif op == "move":
            await ws.move(path, path + ".moved")
        else:
            await ws.delete(path)
        return since(t0)

    def raw(op: str) -> tuple[float, float]:
        path = scratch / "r" / name()
        if op == "write_new":
            t0 = now()
            tree.raw_durable_write(path, PAYLOAD)
            return since(t0)
        tree.raw_durable_write(path, PAYLOAD)
        t0 = now()
        if op == "edit":
            tree.raw_durable_write(path, path.read_bytes().replace(b"EDITME", b"EDITED", 1))
        elif op == "move":
            tree.raw_durable_move(path, path.with_name(path.name + ".moved"))
        else:
            tree.raw_durable_delete(path)
        return since(t0)

    async def run() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for op in OPS:
            await bastion(op)  # warm: the pool's threads, caches
            raw(op)
            b = [await bastion(op) if i % 2 else raw(op) for i in range(2 * repeat)]
            for tool, got in (("bastion", b[1::2]), ("raw", b[0::2])):
                out[op] = out.get(op, {})
                out[op][tool] = statistics.median(wall for wall, _ in got)
                out[op][tool + "_cpu"] = statistics.median(cpu for _, cpu in got)
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=60, help="calls per op in one child")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--journal", action="store_true", help="the change journal on")
    parser.add_argument("--no-fsync", action="store_true", help="os.fsync a no-op (see doc)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        if opts.no_fsync:
            os.fsync = lambda fd: None
        scratch = Path(tempfile.mkdtemp(prefix="durable-", dir=opts.dir))
        try:
            print(json.dumps(child(scratch, opts.repeat, opts.journal)))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    args = ["--child", "--repeat", str(opts.repeat), "--dir", str(opts.dir)]
    args += ["--journal"] * opts.journal + ["--no-fsync"] * opts.no_fsync
    got: dict[str, list[dict[str, dict[str, float]]]] = before_after(
        __file__, opts.base, args, rounds=opts.rounds, prefix="durable-src-"
    )
    print(f"load average {os.getloadavg()[0]:.2f}; {opts.rounds} rounds x {opts.repeat} calls")
    for clock, key in (("wall", ""), ("CPU of the process, all threads", "_cpu")):
        print(f"\n{clock}: medians over rounds of each round's median")
        print(
            f"{'op':10} {'before ms':>10} {'after ms':>9} {'raw ms':>7} {'after/before':>13} "
            f"{'before/raw':>11} {'after/raw':>10}"
        )
        for op in OPS:
            med = {
                label: statistics.median(x[op]["bastion" + key] for x in got[label])
                for label in got
            }
            floor = statistics.median(x[op]["raw" + key] for label in got for x in got[label])
            print(
                f"{op:10} {med['before'] * 1e3:10.3f} {med['after'] * 1e3:9.3f} "
                f"{floor * 1e3:7.3f} {med['after'] / med['before']:13.2f} "
                f"{med['before'] / floor:11.2f} {med['after'] / floor:10.2f}"
            )


if __name__ == "__main__":
    main()
