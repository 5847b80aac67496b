"""One atomic kill: when a limit ends a command, no process of it runs another instruction
(its shell does not go on to the next line when its child dies first), and nothing is left
behind, not even a zombie.

Real bubblewrap under full CPU load (a burner per core, started and ended here): the kill used
to go process by process, and under load a shell whose ``sleep`` died first ran ``echo done``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sandbox_support import READER, left_for_the_host, require_bwrap, workspace

from bastion import RunLimits, RunResult

pytestmark = pytest.mark.usefixtures("bwrap")

_AT_ONCE = 10
"""Commands run side by side (the load is part of the test)."""


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


_ROOM = RunLimits(processes=4096)
"""The process limit counts the sandbox user's processes on the whole host (every sandbox of a
root caller is ``nobody``): a fork refused there would let a shell go on to ``echo done``."""

# (command, limits, timeout, the limit expected to end it); 100 runs in all
_CASES: list[tuple[str, RunLimits, float, str]] = [
    *[("echo started; sleep 20; echo done", _ROOM, 1.0, "timeout")] * 25,
    *[("sleep 20; touch /scratch/marker", _ROOM, 1.0, "timeout")] * 20,
    # eight shells, each waiting on its own sleep: any one of them outliving its sleep shows
    *[
        (
            "for i in 1 2 3 4 5 6 7 8; do (sleep 20; echo done; touch /scratch/marker$i) & done;"
            " sleep 20; echo done",
            _ROOM,
            1.0,
            "timeout",
        )
    ]
    * 20,
    # killed right after the output goes over: the shell is then starting or in its sleep
    *[
        (
            "head -c 3000 /dev/zero; sleep 20; echo done; touch /scratch/marker",
            RunLimits(output_bytes=1000, processes=4096),
            60.0,
            "output",
        )
    ]
    * 20,
    *[
        (
            "head -c 300000 /dev/zero > /scratch/fill; sleep 20; touch /scratch/marker; echo done",
            RunLimits(written_bytes=100_000, processes=4096),
            60.0,
            "written",
        )
    ]
    * 15,
]


@pytest.mark.usefixtures("full_load")
async def test_a_limit_ends_the_whole_tree_at_once_under_full_load() -> None:
    ws = await workspace(READER)
    results: list[tuple[str, str, RunResult]] = []
    for first in range(0, len(_CASES), _AT_ONCE):
        batch = _CASES[first : first + _AT_ONCE]
        done = await asyncio.gather(
            *(
                ws.run(command, timeout=timeout, limits=limits)
                for command, limits, timeout, _ in batch
            )
        )
        results += [(case[0], case[3], result) for case, result in zip(batch, done, strict=True)]
    assert len(results) == 100
    for command, limit, result in results:
        assert result.limit == limit, (command, result)
        assert result.exit_code is None, (command, result)
        assert "done" not in result.stdout, (command, result.stdout)
        assert not [p for p in result.refused if "marker" in p], (command, result.refused)
        assert result.changed == ()
    assert not await ws.exists("/scratch/marker")


_MAIN = """
async def main():
    ws = await workspace()
    for _ in range(3):
        await ws.run("sleep 20 & sleep 20; echo done", timeout=0.5)
    await ws.run("sleep 20 & setsid sleep 20 & echo started", timeout=5)  # exits, leaves two
    await ws.run("yes", limits=RunLimits(output_bytes=1000))
    await ws.run("echo ok")
    info = await ws.start_process("sleep 30 & sleep 30", cwd="/scratch")
    await ws.kill_process(info.id)
    await ws.start_process("sleep 30", cwd="/scratch")
    await ws.close_processes()

"""


def test_nothing_is_left_behind_not_even_a_zombie(tmp_path: Path) -> None:
    # in a process of its own that makes itself the subreaper: a sandbox's PID 1 left for the
    # host to reap (bubblewrap killed before it) would come back to it as a zombie
    assert left_for_the_host(_MAIN, tmp_path, timeout=120) == []
