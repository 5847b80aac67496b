"""Background processes: start, list, read output with offsets, send input, kill, write back;
each owned by the principal that started it and absent for everyone else; killed with their
scope, when the workspace closes or is dropped.

Real bubblewrap, real processes (skipped only where bubblewrap cannot run here, and the skip
says why). Waits are polls with a deadline, never timing assertions.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

from bastion import (
    MemoryAuditSink,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    RunLimits,
    SandboxError,
    Workspace,
)
from bastion.agents.scopes import Scopes

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


async def _until(check: Callable[[], Awaitable[bool]], seconds: float = 30) -> None:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_a_process_runs_in_the_background_and_its_changes_come_back_when_it_ends() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(
        "read line; echo got $line; echo $line > /scratch/from-input.txt; echo bye >&2",
        cwd="/scratch",
    )
    assert info.state == "running" and info.cwd == "/scratch"
    assert [p.id for p in await ws.processes()] == [info.id]
    assert await ws.send_input(info.id, "hello\n") == 6

    async def ended() -> bool:
        return (await ws.processes())[0].state != "running"

    await _until(ended)
    done = (await ws.processes())[0]
    assert (done.state, done.exit_code, done.limit) == ("exited", 0, None)
    assert done.changed == ("/scratch/from-input.txt",) and done.refused == {}
    assert await ws.read_text("/scratch/from-input.txt") == "hello\n"
    out = await ws.read_output(info.id)
    assert (out.text, out.offset, out.next_offset, out.running) == ("got hello\n", 0, 10, False)
    err = await ws.read_output(info.id, stream="stderr")
    assert err.text == "bye\n"


async def test_output_is_read_from_offsets_and_only_the_last_bytes_are_kept() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(
        "for i in $(seq 1000 1999); do echo $i; done", limits=RunLimits(output_bytes=1000)
    )

    async def ended() -> bool:
        return (await ws.read_output(info.id, limit=1)).running is False

    await _until(ended)
    done = (await ws.processes())[0]
    assert done.stdout_bytes == 5000  # everything it printed is counted
    first = await ws.read_output(info.id, limit=10)
    assert (first.skipped, first.offset, first.text) == (4000, 4000, "1800\n1801\n")
    more = await ws.read_output(info.id, offset=first.next_offset, limit=10)
    assert (more.offset, more.text) == (4010, "1802\n1803\n")
    end = await ws.read_output(info.id, offset=5000)
    assert (end.text, end.offset, end.total) == ("", 5000, 5000)


async def test_another_principal_sees_no_process_and_gets_not_found() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(["sleep", "30"])
    other = ws.with_principal(OWNER)
    assert await other.processes() == []
    for call in (
        other.read_output(info.id),
        other.send_input(info.id, "x"),
        other.kill_process(info.id),
        other.write_back(info.id),
    ):
        with pytest.raises(NotFoundError) as caught:
            await call
        with pytest.raises(NotFoundError) as never:
            await other.read_output("0000beef")
        assert str(caught.value).replace(info.id, "X") == str(never.value).replace("0000beef", "X")
    assert (await ws.processes())[0].state == "running"  # untouched
    killed = await ws.kill_process(info.id)
    assert killed.state == "killed" and killed.limit == "killed"


async def test_a_killed_process_brings_nothing_back_but_an_explicit_write_back_does() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(
        "echo first > /scratch/one.txt; while [ ! -e /scratch/go ]; do sleep 0.05; done; "
        "echo second > /scratch/two.txt; sleep 60"
    )

    async def has_one() -> bool:
        back = await ws.write_back(info.id)
        return "/scratch/one.txt" in back.changed

    await _until(has_one)
    assert await ws.read_text("/scratch/one.txt") == "first\n"  # the process runs on
    # a change made in the workspace meanwhile is not overwritten by a later write-back
    await ws.write("/scratch/a.txt", "changed outside\n")
    killed = await ws.kill_process(info.id)
    assert killed.state == "killed" and killed.exit_code is None
    assert killed.changed == ("/scratch/one.txt",)
    assert not await ws.exists("/scratch/two.txt")
    assert await ws.read_text("/scratch/a.txt") == "changed outside\n"


async def test_after_an_explicit_write_back_the_end_brings_back_the_later_change() -> None:
    ws = await workspace(READER)
    info = await ws.start_process("echo 1 > /scratch/n.txt; read go; echo 2 > /scratch/n.txt")

    async def first() -> bool:
        return "/scratch/n.txt" in (await ws.write_back(info.id)).changed

    await _until(first)
    assert await ws.read_text("/scratch/n.txt") == "1\n"
    await ws.send_input(info.id, "go\n")

    async def ended() -> bool:
        return (await ws.processes())[0].state != "running"

    await _until(ended)
    done = (await ws.processes())[0]
    assert (done.state, done.refused) == ("exited", {})  # no conflict with its own write
    assert await ws.read_text("/scratch/n.txt") == "2\n"


async def test_at_its_end_a_change_made_meanwhile_is_a_conflict_and_the_guard_refuses() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(
        "read go; echo mine >> /scratch/a.txt; echo no > /out/report.txt; echo yes > /scratch/c"
    )
    await ws.with_principal(OWNER).write("/scratch/a.txt", "changed meanwhile\n")
    await ws.send_input(info.id, "go\n")

    async def ended() -> bool:
        return (await ws.processes())[0].state != "running"

    await _until(ended)
    done = (await ws.processes())[0]
    assert done.state == "exited" and done.changed == ("/scratch/c",)
    assert done.refused["/scratch/a.txt"].startswith("conflict:")
    assert "not allowed by policy" in done.refused["/out/report.txt"]
    assert await ws.read_text("/scratch/a.txt") == "changed meanwhile\n"
    assert await ws.read_text("/out/report.txt") == "quarterly\n"


async def test_the_timeout_and_written_limit_end_a_background_process() -> None:
    ws = await workspace(READER)
    slow = await ws.start_process(["sleep", "60"], timeout=0.5)
    big = await ws.start_process(
        "head -c 50000 /dev/zero > /scratch/big; sleep 60",
        limits=RunLimits(written_bytes=10_000),
    )

    async def both_ended() -> bool:
        return all(p.state != "running" for p in await ws.processes())

    await _until(both_ended)
    by_id = {p.id: p for p in await ws.processes()}
    assert (by_id[slow.id].state, by_id[slow.id].limit) == ("killed", "timeout")
    assert (by_id[big.id].state, by_id[big.id].limit) == ("killed", "written")
    assert "/scratch/big" in by_id[big.id].refused
    assert not await ws.exists("/scratch/big")


async def test_starting_needs_execute_and_is_audited_with_the_command() -> None:
    sink = MemoryAuditSink()
    rules = (Rule.allow("execute", "/scratch/**", "/scratch"), Rule.allow("*", "/**"))
    ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=Policy(rules=rules), audit=sink)
    with pytest.raises(PolicyDeniedError):
        await ws.start_process(["sleep", "1"], cwd="/")
    info = await ws.start_process(["sleep", "30"], cwd="/scratch")
    starts = [r for r in sink.records if r.operation == "start"]
    assert [(r.allowed, r.reason.split("; ")[-1]) for r in starts] == [
        (False, "command: sleep 1"),
        (True, "command: sleep 30"),
    ]
    assert await ws.close_processes() == 1
    assert (await ws.processes())[0].id == info.id


async def test_a_principal_may_run_only_so_many_at_once() -> None:
    ws = await workspace(READER)
    for _ in range(8):
        await ws.start_process(["sleep", "30"])
    with pytest.raises(SandboxError, match="8 background processes running"):
        await ws.start_process(["sleep", "30"])
    assert await ws.close_processes() == 8
    assert all(p.state == "killed" for p in await ws.processes())


async def test_ending_a_thread_kills_its_processes() -> None:
    marker = f"bastion-bg-{uuid.uuid4().hex[:8]}"
    policy = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))
    scopes = Scopes.on(MemoryStore(), policy=policy)
    scoped = scopes.workspace(Principal.of("bot"), agent_id="bot", thread_id="t1")
    await scoped.workspace.write("/thread/a.txt", "x")
    info = await scoped.workspace.start_process(["sh", "-c", f"sleep 60; echo {marker}"])
    assert _alive(marker)
    await scoped.end_thread()
    assert not _alive(marker)
    assert (await scoped.workspace.processes())[0].state == "killed"
    assert (await scoped.workspace.processes())[0].id == info.id


async def test_scopes_end_thread_kills_the_threads_processes_in_every_workspace() -> None:
    marker = f"bastion-bg-{uuid.uuid4().hex[:8]}"
    policy = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))
    scopes = Scopes.on(MemoryStore(), policy=policy)
    bot = Principal.of("bot")
    first = scopes.workspace(bot, agent_id="bot", thread_id="t1")
    other = scopes.workspace(bot, agent_id="bot", thread_id="t2")
    await first.workspace.start_process(["sh", "-c", f"sleep 60; echo {marker}-1"])
    await other.workspace.start_process(["sh", "-c", f"sleep 60; echo {marker}-2"])
    cleanup = await scopes.end_thread("t1", principal=bot)  # a workspace of its own
    assert cleanup.thread_id == "t1"
    assert not _alive(f"{marker}-1") and _alive(f"{marker}-2")  # only t1's
    assert (await first.workspace.processes())[0].state == "killed"
    await other.workspace.close_processes()


def _views() -> set[str]:
    return {p for p in os.listdir("/tmp") if p.startswith("bastion-sandbox-")}


async def test_dropping_the_workspace_kills_its_processes_and_removes_their_views() -> None:
    marker = f"bastion-bg-{uuid.uuid4().hex[:8]}"
    ws = await workspace(READER)
    before = _views()
    await ws.start_process(["sh", "-c", f"sleep 60; echo {marker}"])
    mine = _views() - before  # its view (other test workers make views of their own)
    assert _alive(marker) and mine
    del ws
    for _ in range(100):
        gc.collect()
        if not _alive(marker) and not _views() & mine:
            break
        await asyncio.sleep(0.05)
    assert not _alive(marker)
    assert not _views() & mine


def test_the_blocking_facade_runs_background_processes() -> None:
    ws = asyncio.run(workspace(READER)).sync()
    info = ws.start_process("cat > /scratch/echo.txt; echo done", cwd="/scratch")
    ws.send_input(info.id, "via the facade\n", close=True)
    for _ in range(600):
        if ws.processes()[0].state != "running":
            break
        time.sleep(0.05)
    done = ws.processes()[0]
    assert (done.state, done.changed) == ("exited", ("/scratch/echo.txt",))
    assert ws.read_text("/scratch/echo.txt") == "via the facade\n"
    assert ws.read_output(info.id).text == "done\n"
