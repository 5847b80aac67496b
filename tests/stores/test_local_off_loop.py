"""The local store works off the event loop (issue 26): a lock another process holds makes
only the calls that need it wait, a mount's timeout bounds them, and a call that timed out
changed nothing and frees its thread."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import LocalStore, Mount, Policy, VPath, Workspace
from bastion.core.errors import StoreUnavailableError
from bastion.core.offload import Abandoned, Ticket, Workers, commit, wait_until

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A folder whose lock another process holds until the test writes a line to it."""
    folder = tmp_path / "team"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    try:
        yield folder, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    proc.wait(timeout=30)


async def test_a_write_that_times_out_on_a_held_lock_changes_nothing(
    held: tuple[Path, subprocess.Popen[str]],
) -> None:
    folder, proc = held
    store = LocalStore(folder, threads=1)  # one thread: it must come back for the next call
    ws = Workspace([Mount.of("/team", store, timeout=0.5)], policy=Policy.allow_all())
    with pytest.raises(StoreUnavailableError, match=r"mount /team \(local\) did not answer"):
        await ws.write("/team/a.md", "first")
    # Meanwhile, and after: what needs no lock goes on (reads, listings) on the one thread.
    assert [e.path.name for e in await store.list(VPath.ROOT)] == []
    _release(proc)
    await ws.write("/team/b.md", "second")  # the thread gave up its wait and is free
    assert sorted(p.name for p in folder.iterdir()) == ["b.md"]  # a.md was never written
    store.close()


async def test_a_waiting_write_keeps_the_event_loop_free(
    held: tuple[Path, subprocess.Popen[str]],
) -> None:
    folder, proc = held
    store = LocalStore(folder)
    ws = Workspace([Mount.of("/team", store)], policy=Policy.allow_all())
    write = asyncio.create_task(ws.write("/team/a.md", "x"))
    ticks = 0
    while ticks < 50:  # the loop goes round while the write waits for the lock
        await asyncio.sleep(0.001)
        ticks += 1
    assert not write.done()
    _release(proc)
    info = await write
    assert info.size == 1 and (folder / "a.md").read_text() == "x"
    store.close()


def test_an_abandoned_ticket_stops_a_wait_and_refuses_its_commit() -> None:
    ticket = Ticket()
    assert ticket.abandon() and ticket.abandoned
    with pytest.raises(Abandoned):
        ticket.commit()
    late = Ticket()
    late.commit()
    assert late.abandon() is False  # past its commit point: the work finishes


async def test_a_cancelled_call_gives_up_its_wait_in_the_thread() -> None:
    workers = Workers("test", threads=1)
    gave_up = threading.Event()
    committed: list[bool] = []

    def waits_forever() -> None:
        try:
            wait_until(lambda: False)
        except Abandoned:
            gave_up.set()
            raise
        commit()
        committed.append(True)

    call = asyncio.create_task(workers.run(waits_forever))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(gave_up.wait, 30)
    assert committed == []
    assert await workers.run(lambda: 42) == 42  # the one thread is free again
    workers.close()
