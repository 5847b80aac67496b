"""Decision 0107's levers against their old code, in one process, call by call (issue 31).

A loaded machine swings from one second to the next, so two child processes (one per
revision, as ``bench/durable_writes.py`` runs them) can land in different weather. Here one
process runs a ``Workspace.write`` (a new 4 KiB file), ``edit``, ``move`` and ``delete`` on a
``LocalStore`` mount, switching before each call, in a shuffled order, between this tree's
code and the old code of the functions decision 0107 changed, loaded from ``--base``:

* ``Workers.run`` (the worker hop: ``run_in_executor`` then, the work answering the loop's
  future now);
* ``Transfers._rename`` (a file's rename admitted a second time then);
* ``GuardedStore.drop_sidecar`` (a delete of a sidecar known to be absent then);
* ``LocalStore._rename`` and ``_rename_locked`` (the folder opened twice for a rename within
  it then).

    PYTHONPATH=src python bench/durable_levers.py --base 0ff5751 [--calls 300] [--no-fsync]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

TEXT = ("EDITME\n" + "bastion peers benchmark line of text, 64 bytes long, writes.\n" * 70)[:4096]
OPS = ("write", "edit", "move", "delete")


def _old(base: str, path: str, attr: str) -> Any:
    """``attr`` of the module at ``path`` as it was at ``base`` (loaded under its own name)."""
    text = subprocess.run(
        ["git", "show", f"{base}:{path}"], check=True, capture_output=True, text=True
    ).stdout
    name = "old_" + path.replace("/", "_").removesuffix(".py")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(text, path, "exec"), module.__dict__)  # our own old source
    return getattr(module, attr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the revision of the old code")
    parser.add_argument("--calls", type=int, default=300, help="calls per lever and op")
    parser.add_argument("--no-fsync", action="store_true", help="os.fsync a no-op")
    opts = parser.parse_args()
    if opts.no_fsync:
        os.fsync = lambda fd: None

    from bastion import Mount, Policy, Workspace
    from bastion.core import offload
    from bastion.core.guard import GuardedStore
    from bastion.stores.local import LocalStore
    from bastion.workspace.transfer import Transfers

    old_guard = _old(opts.base, "src/bastion/core/guard.py", "GuardedStore")
    old_transfers = _old(opts.base, "src/bastion/workspace/transfer.py", "Transfers")
    old_local = _old(opts.base, "src/bastion/stores/local.py", "LocalStore")
    old_workers = _old(opts.base, "src/bastion/core/offload.py", "Workers")

    async def old_run(self: offload.Workers, fn: Any, *args: Any) -> Any:
        # the old hop's body, over this tree's tickets and context variables
        ticket = offload.Ticket(offload.COMMIT_GATE.get())
        future = asyncio.get_running_loop().run_in_executor(
            self._executor(), offload._call, ticket, fn, args
        )
        limit = offload.CALL_LIMIT.get()
        try:
            if limit is None:
                return await future
            try:
                async with asyncio.timeout(limit.seconds):
                    return await future
            except TimeoutError:
                ticket.abandon()
                raise limit.unavailable() from None
        except asyncio.CancelledError:
            ticket.abandon()
            raise

    assert old_workers.run is not offload.Workers.run  # the base has its own hop
    levers = {
        "new": (
            offload.Workers.run,
            GuardedStore.drop_sidecar,
            Transfers._rename,
            LocalStore._rename,
            LocalStore._rename_locked,
        ),
        "old": (
            old_run,
            old_guard.drop_sidecar,
            old_transfers._rename,
            old_local._rename,
            old_local._rename_locked,
        ),
    }

    def use(which: str) -> None:
        run, drop, rename, local_rename, local_locked = levers[which]
        offload.Workers.run = run  # type: ignore[method-assign]
        GuardedStore.drop_sidecar = drop  # type: ignore[method-assign]
        Transfers._rename = rename  # type: ignore[method-assign]
        LocalStore._rename = local_rename  # type: ignore[method-assign]
        LocalStore._rename_locked = local_locked  # type: ignore[method-assign]

    scratch = Path(tempfile.mkdtemp(prefix="durable-levers-"))
    ws = Workspace(
        [Mount.of("/s", LocalStore(scratch), scope="read_write")], policy=Policy.allow_all()
    )
    counter = [0]

    async def one(op: str) -> tuple[float, float]:
        counter[0] += 1
        path = f"/s/f{counter[0]:06}.txt"
        if op != "write":
            await ws.write(path, TEXT)
        t0, c0 = time.perf_counter(), time.process_time()
        if op == "write":
            await ws.write(path, TEXT)
        elif op == "edit":
            await ws.edit(path, "EDITME", "EDITED")
        elif op == "move":
            await ws.move(path, path + ".moved")
        else:
            await ws.delete(path)
        return time.perf_counter() - t0, time.process_time() - c0

    async def run() -> None:
        fsync = "off" if opts.no_fsync else "on"
        print(f"load average {os.getloadavg()[0]:.2f}; {opts.calls} calls each; fsync {fsync}")
        heads = ("old wall", "new wall", "ratio", "old CPU", "new CPU", "ratio")
        print(f"{'op':7} " + " ".join(f"{h:>9}" for h in heads))
        for op in OPS:
            got: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
            order = ["old", "new"] * opts.calls
            random.shuffle(order)
            for i, which in enumerate(["old", "new"] * 5 + order):
                use(which)
                took = await one(op)
                if i >= 10:  # the first ten warm both up
                    got[which].append(took)
            wall = {k: statistics.median(w for w, _ in v) * 1e3 for k, v in got.items()}
            cpu = {k: statistics.median(c for _, c in v) * 1e3 for k, v in got.items()}
            print(
                f"{op:7} {wall['old']:9.3f} {wall['new']:9.3f} {wall['new'] / wall['old']:9.2f} "
                f"{cpu['old']:9.3f} {cpu['new']:9.3f} {cpu['new'] / cpu['old']:9.2f}"
            )

    asyncio.run(run())


if __name__ == "__main__":
    main()
