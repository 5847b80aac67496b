"""The blocking facade is derived from the async workspace, method for method."""

from __future__ import annotations

import asyncio
import inspect
import threading

from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import SyncWorkspace, Workspace


def _public_coroutines(cls: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    }


def test_every_async_method_has_a_blocking_twin() -> None:
    missing = _public_coroutines(Workspace) - set(dir(SyncWorkspace))
    assert not missing, f"SyncWorkspace lacks {sorted(missing)}"
    for name in _public_coroutines(Workspace):
        twin = getattr(SyncWorkspace, name)
        assert not inspect.iscoroutinefunction(twin)
        assert inspect.signature(twin) == inspect.signature(getattr(Workspace, name))
        assert twin.__doc__ == getattr(Workspace, name).__doc__


def _ws() -> SyncWorkspace:
    return SyncWorkspace.create([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())


def test_blocking_calls_work_from_plain_code_threads_and_running_loops() -> None:
    ws = _ws()
    ws.write("/m/a.txt", "hello")
    assert ws.read_text("/m/a.txt") == "hello"

    results: list[str] = []

    def worker(i: int) -> None:
        ws.write(f"/m/t{i}.txt", str(i))
        results.append(ws.read_text(f"/m/t{i}.txt"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [str(i) for i in range(8)]

    async def inside_a_loop() -> str:
        return ws.read_text("/m/a.txt")

    assert asyncio.run(inside_a_loop()) == "hello"


def test_facade_shares_state_with_its_async_workspace() -> None:
    ws = _ws()
    ws.write("/m/x.txt", "x")

    async def read() -> str:
        return await ws.aio.read_text("/m/x.txt")

    assert asyncio.run(read()) == "x"
    assert ws.with_principal(ws.principal).read_text("/m/x.txt") == "x"
    assert "/m/" in ws.filesystem_map()
