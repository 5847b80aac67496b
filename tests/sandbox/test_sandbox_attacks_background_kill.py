"""Red team of the one kill for background processes, with real bubblewrap under full CPU load:
however a background process ends (its timeout, ``kill_process``, ``close_processes``, the
written limit, a kill while its changes are being written back, or its own exit with children
still in the background), no process of it runs another instruction, nothing it did after
the end comes back, and nothing is left for the host, not even a zombie.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sandbox_support import READER, left_for_the_host, require_bwrap, workspace

from bastion import RunLimits, Workspace
from bastion.sandbox.process_info import ProcessInfo

pytestmark = pytest.mark.usefixtures("bwrap")

_ROOM = RunLimits(processes=4096)
_TREE = (
    "for i in 1 2 3 4 5 6 7 8; do (sleep 20; echo done; touch /scratch/marker$i) & done; "
    "echo started; sleep 20; echo done; touch /scratch/marker"
)
"""Eight shells each waiting on its own sleep, and the main one: any one outliving its
sleep prints ``done`` or leaves a marker."""


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


async def _ended(ws: Workspace, pid: str) -> ProcessInfo:
    for _ in range(1200):
        info = next(p for p in await ws.processes() if p.id == pid)
        if info.state != "running":
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} did not end")


async def _started(ws: Workspace, pid: str) -> None:
    """Until the process has printed ``started`` (its children are all forked)."""
    for _ in range(1200):
        if "started" in (await ws.read_output(pid)).text:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} did not start")


def _clean(info: ProcessInfo) -> None:
    assert info.state == "killed" and info.exit_code is None, info
    assert info.changed == () and info.deleted == (), info
    assert not [p for p in info.refused if "marker" in p], info


@pytest.mark.usefixtures("full_load")
async def test_every_way_a_background_process_ends_ends_its_whole_tree() -> None:
    ws = await workspace(READER)
    infos: list[ProcessInfo] = []
    for _ in range(3):
        # by its own timeout
        timed = [
            await ws.start_process(_TREE, cwd="/scratch", timeout=1.0, limits=_ROOM)
            for _ in range(4)
        ]
        # by kill_process and close_processes, once every child is forked
        killed = [
            await ws.start_process(_TREE, cwd="/scratch", timeout=60, limits=_ROOM)
            for _ in range(4)
        ]
        for info in killed:
            await _started(ws, info.id)
        await asyncio.gather(*(ws.kill_process(i.id) for i in killed[:2]))
        assert await ws.close_processes() >= 2
        infos += [await _ended(ws, i.id) for i in [*timed, *killed]]
        for info in infos[-8:]:
            output = (await ws.read_output(info.id)).text
            assert "done" not in output, (info, output)
    assert len(infos) == 24
    for info in infos:
        _clean(info)
    assert not await ws.exists("/scratch/marker")


@pytest.mark.usefixtures("full_load")
async def test_a_kill_while_changes_are_written_back_brings_nothing_later() -> None:
    ws = await workspace(READER)
    for round_ in range(5):
        info = await ws.start_process(
            "i=0; echo started; while :; do i=$((i+1)); echo $i > /scratch/n$((i % 50)); done",
            cwd="/scratch",
            timeout=60,
            limits=_ROOM,
        )
        await _started(ws, info.id)
        back, gone = await asyncio.gather(
            ws.write_back(info.id), ws.kill_process(info.id), return_exceptions=True
        )
        assert not isinstance(back, BaseException) and not isinstance(gone, BaseException)
        ended = await _ended(ws, info.id)
        assert ended.state == "killed" and ended.limit == "killed"
        # what came back is what a file held at one moment before the kill (a live
        # write-back: ``echo $i >`` may have just emptied it); the end brought nothing more
        for path in ended.changed:
            text = await ws.read_text(path)
            assert text == "" or text.strip().isdigit(), (round_, path, text)
        assert all("killed" in why for why in ended.refused.values() if why), ended.refused


async def test_children_left_by_a_process_that_exits_never_write_back() -> None:
    ws = await workspace(READER)
    info = await ws.start_process(
        "(sleep 1; echo late > /scratch/late) & (setsid sh -c 'sleep 1; touch /scratch/late2' &)"
        "; echo early > /scratch/early; exit 0",
        cwd="/scratch",
        timeout=60,
    )
    ended = await _ended(ws, info.id)
    assert ended.state == "exited" and ended.exit_code == 0
    assert ended.changed == ("/scratch/early",)
    await asyncio.sleep(2)
    assert not await ws.exists("/scratch/late") and not await ws.exists("/scratch/late2")


_MAIN = """
async def ended(ws, pid):
    while next(p for p in await ws.processes() if p.id == pid).state == "running":
        await asyncio.sleep(0.05)

async def main():
    ws = await workspace()
    room = RunLimits(processes=4096)
    a = await ws.start_process("(sleep 30 &) ; setsid sleep 30 & exit 0", cwd="/scratch")
    b = await ws.start_process("sleep 30 & sleep 30", cwd="/scratch", timeout=0.5)
    c = await ws.start_process(
        "yes > /scratch/fill", cwd="/scratch", limits=RunLimits(written_bytes=100_000)
    )
    d = await ws.start_process("while :; do echo x > /scratch/f; done", cwd="/scratch")
    await asyncio.gather(ws.write_back(d.id), ws.kill_process(d.id))
    for info in (a, b, c):
        await ended(ws, info.id)
    for _ in range(3):
        await ws.start_process("sleep 30 & exec sleep 30", cwd="/scratch", limits=room)
    await ws.close_processes()

"""


def test_no_background_process_leaves_anything_for_the_host(tmp_path: Path) -> None:
    assert left_for_the_host(_MAIN, tmp_path, timeout=180) == []
