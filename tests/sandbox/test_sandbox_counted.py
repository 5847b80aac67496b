"""Limits that count everything the command can use: the wall clock from the start whatever
its input does, ``/dev/shm`` inside ``tmp_bytes``, no memory outside the per-process limit
(memfds, System V shared memory), deleted-but-open files in the written bytes, entries in
``/tmp``, and a command too long for the kernel refused in one line.

Real bubblewrap and real processes; each case is an attack that got past the limits before.
"""

from __future__ import annotations

import asyncio
import json
import platform

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

from bastion import RunLimits, SandboxError, Workspace
from bastion.agents.openai import OpenAITools
from bastion.agents.tools import Toolset
from bastion.sandbox import ProcessInfo

pytestmark = pytest.mark.usefixtures("bwrap")

MiB = 1024 * 1024


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


# -- the wall clock and the input -------------------------------------------------------------


@pytest.mark.parametrize("timeout", [1, 2])
@pytest.mark.parametrize(
    "command",
    [
        "sleep 30; echo late",  # never reads its input
        "head -c 100 > /dev/null; sleep 30; echo late",  # reads a little, then stops
    ],
)
async def test_input_the_command_does_not_read_does_not_hold_the_clock(
    timeout: int, command: str
) -> None:
    ws = await workspace(READER)
    result = await ws.run(command, stdin="x" * 300_000, timeout=timeout)
    assert result.limit == "timeout" and result.exit_code is None
    assert "late" not in result.stdout  # it was ended at its timeout, not after its sleep


async def test_input_the_command_reads_arrives_whole() -> None:
    ws = await workspace(READER)
    result = await ws.run("wc -c", stdin="é" * 200_000, timeout=30)
    assert result.ok and result.stdout.strip() == "400000"


# -- /dev/shm, /dev and /etc -------------------------------------------------------------------


async def test_dev_shm_is_inside_tmp_bytes() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "head -c 100000000 /dev/zero > /dev/shm/fill; du -sk /dev/shm | cut -f1",
        limits=RunLimits(tmp_bytes=8 * MiB, file_bytes=200 * MiB),
        timeout=30,
    )
    assert "No space left on device" in result.stderr
    assert int(result.stdout.split()[-1]) <= 8 * 1024


async def test_tmp_and_dev_shm_share_one_size() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "head -c 6000000 /dev/zero > /tmp/a && echo tmp-ok; "
        "head -c 6000000 /dev/zero > /dev/shm/b && echo shm-ok; ls /dev/shm",
        limits=RunLimits(tmp_bytes=8 * MiB),
        timeout=30,
    )
    assert "tmp-ok" in result.stdout and "shm-ok" not in result.stdout
    assert "No space left on device" in result.stderr
    assert result.stdout.split()[-2:] == ["a", "b"]  # one file system under both names


async def test_posix_shared_memory_still_works_within_the_size() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        ["python3", "-c", "import multiprocessing as m; m.Lock(); print('lock')"], timeout=30
    )
    assert result.ok and result.stdout == "lock\n"


async def test_dev_is_read_only_and_etc_too_with_the_network_on() -> None:
    ws = await workspace(READER)
    result = await ws.run("touch /dev/x; head -c 1000000 /dev/zero > /dev/fill; echo $?")
    assert result.stderr.count("Read-only file system") == 2
    assert result.stdout.strip() != "0"  # the redirection failed
    networked = await ws.run(
        "touch /etc/x; head -c 1000000 /dev/zero > /etc/fill; echo $?",
        limits=RunLimits(network=True),
    )
    assert networked.stderr.count("Read-only file system") == 2


# -- memory outside the per-process limit ------------------------------------------------------

_MEMORY = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
held = 0
try:
    for _ in range(64):  # 64 x 32 MiB: far past memory_bytes, none of it in any address space
        fd = os.memfd_create("fill")
        os.ftruncate(fd, 32 << 20)
        os.write(fd, b"x" * (32 << 20))
        held += 32 << 20
except OSError as exc:
    print("memfd_create", errno.errorcode[exc.errno])
print("memfd held", held)
for name, args in (("shmget", (0, 64 << 20, 0o1600)), ("msgget", (0, 0o1600)),
                   ("semget", (0, 8, 0o1600))):
    ctypes.set_errno(0)
    got = getattr(libc, name)(*args)
    print(name, got, errno.errorcode.get(ctypes.get_errno(), "-"))
"""


async def test_memfds_and_system_v_ipc_are_not_there() -> None:
    ws = await workspace(READER)
    limits = RunLimits(memory_bytes=512 * MiB, file_bytes=64 * MiB)
    result = await ws.run(["python3", "-c", _MEMORY], limits=limits, timeout=60)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["memfd_create ENOSYS", "memfd held 0"]
    assert lines[2:] == ["shmget -1 ENOSYS", "msgget -1 ENOSYS", "semget -1 ENOSYS"]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the raw call number is x86-64's")
async def test_memfd_secret_is_not_there() -> None:
    ws = await workspace(READER)
    script = (
        "import ctypes, errno; libc = ctypes.CDLL(None, use_errno=True); "
        "print(libc.syscall(447, 0), errno.errorcode[ctypes.get_errno()])"
    )
    result = await ws.run(["python3", "-c", script], timeout=30)
    assert result.stdout == "-1 ENOSYS\n"


# -- the disk: files deleted while open, entries in /tmp -------------------------------------


async def test_a_deleted_open_file_counts_as_written() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "exec 3> /scratch/big; rm /scratch/big; head -c 60000000 /dev/zero >&3; sleep 30;"
        " echo late",
        limits=RunLimits(written_bytes=8 * MiB, file_bytes=100 * MiB),
        timeout=60,
    )
    assert result.limit == "written" and "late" not in result.stdout
    assert result.changed == ()


async def test_many_deleted_open_files_count_together() -> None:
    # each under file_bytes, none with a name left, held by one shell
    script = "; ".join(
        f"exec {fd}> /scratch/f{fd}; rm /scratch/f{fd}; head -c 3000000 /dev/zero >&{fd}"
        for fd in range(3, 9)
    )
    ws = await workspace(READER)
    result = await ws.run(
        script + "; sleep 30; echo late",
        limits=RunLimits(written_bytes=8 * MiB, file_bytes=4 * MiB),
        timeout=60,
    )
    assert result.limit == "written" and "late" not in result.stdout


async def test_a_deleted_mapped_file_counts_as_written() -> None:
    script = (
        "import mmap, os, time\n"
        "fd = os.open('/scratch/mapped', os.O_RDWR | os.O_CREAT)\n"
        "os.write(fd, b'x' * (30 << 20))\n"
        "held = mmap.mmap(fd, 30 << 20)\n"
        "os.close(fd); os.unlink('/scratch/mapped')\n"
        "time.sleep(30); print('late')\n"
    )
    ws = await workspace(READER)
    result = await ws.run(
        ["python3", "-c", script],
        limits=RunLimits(written_bytes=8 * MiB, file_bytes=64 * MiB),
        timeout=60,
    )
    assert result.limit == "written" and "late" not in result.stdout


async def test_a_deleted_open_file_in_tmp_counts_against_tmp() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "exec 3> /tmp/big; rm /tmp/big; head -c 60000000 /dev/zero >&3; echo $?",
        limits=RunLimits(tmp_bytes=8 * MiB, file_bytes=100 * MiB),
        timeout=60,
    )
    assert "No space left on device" in result.stderr
    assert result.limit is None and result.stdout == "1\n"


async def test_many_empty_files_in_tmp_hit_its_limit() -> None:
    # a tmpfs counts bytes, not files; 1 MiB of /tmp allows 256 entries
    ws = await workspace(READER)
    result = await ws.run(
        "cd /tmp; i=0; while : > f$i; do i=$((i+1)); done; echo stopped",
        limits=RunLimits(tmp_bytes=MiB),
        timeout=120,
    )
    assert result.limit == "tmp" and result.exit_code is None
    assert "stopped" not in result.stdout


async def test_a_few_files_in_tmp_are_fine() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "cd /tmp; for i in $(seq 1 100); do echo $i > f$i; done; sleep 1; ls | wc -l",
        limits=RunLimits(tmp_bytes=MiB),
        timeout=30,
    )
    assert result.ok and result.stdout.strip() == "100"


# -- a command too long for the kernel --------------------------------------------------------


async def test_a_multibyte_command_over_the_kernels_limit_is_a_clear_error() -> None:
    ws = await workspace(READER)
    # 70,000 characters: under the execute tool's 100,000, but 140,000 bytes in UTF-8
    for command in ("echo " + "é" * 70_000, ["echo", "€" * 50_000]):
        with pytest.raises(SandboxError) as caught:
            await ws.run(command)
        message = str(caught.value)
        assert "\n" not in message and "kernel takes at most 131,071" in message
        assert "nothing was run" in message
    with pytest.raises(SandboxError, match="131,071"):
        await ws.run("true", env={"BIG": "é" * 70_000})


async def test_the_execute_tool_says_so_in_one_line() -> None:
    tools = OpenAITools(Toolset(await workspace(OWNER)))
    out = json.loads(await tools.call("execute", json.dumps({"command": "echo " + "é" * 70_000})))
    assert out["success"] is False
    assert "\n" not in out["error"] and "kernel takes at most" in out["error"]
    assert "failed unexpectedly" not in out["error"]


async def test_arguments_over_the_kernels_total_are_a_clear_error() -> None:
    ws = await workspace(READER)
    with pytest.raises(SandboxError, match="over the kernel's limit for starting a program"):
        await ws.run(["true", *["a" * 120_000] * 40])  # 4.8 MB in all


async def test_a_command_just_under_the_kernels_limit_runs() -> None:
    ws = await workspace(READER)
    result = await ws.run(["sh", "-c", 'printf %s "$0" | wc -c', "é" * 65_000], timeout=30)
    assert result.ok and result.stdout.strip() == "130000"


# -- background processes are held to the same limits ---------------------------------------


async def _ended(ws: Workspace, pid: str) -> ProcessInfo:
    for _ in range(1200):  # a bound, not a timing: the limits end these within a second
        (info,) = [p for p in await ws.processes() if p.id == pid]
        if info.state != "running":
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still running")


async def test_a_background_process_is_held_to_the_tmp_and_written_limits() -> None:
    ws = await workspace(READER)
    many = await ws.start_process(
        "cd /tmp; i=0; while : > f$i; do i=$((i+1)); done",
        cwd="/scratch",
        limits=RunLimits(tmp_bytes=MiB),
    )
    held = await ws.start_process(
        "exec 3> /scratch/big; rm /scratch/big; head -c 30000000 /dev/zero >&3; sleep 60",
        cwd="/scratch",
        limits=RunLimits(written_bytes=8 * MiB),
    )
    first, second = await _ended(ws, many.id), await _ended(ws, held.id)
    assert (first.state, first.limit) == ("killed", "tmp")
    assert (second.state, second.limit) == ("killed", "written")
