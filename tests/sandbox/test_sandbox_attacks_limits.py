"""Red team of the limits, with real bubblewrap: variants the limit tests do not spell out.

Attacks pinned (docs/sandbox.md, "Limits"): a command that ignores SIGTERM, SIGINT and SIGHUP;
one that closes its output and lingers; a flood on stderr only; a large input echoed back
while it is fed (no deadlock between feeding and reading); shared anonymous memory past the
memory limit; thousands of threads; a file with no name from birth (``O_TMPFILE``) filling the
view; writes to ``/proc``; ``/dev/shm`` filled; a double fork into a new session.
"""

from __future__ import annotations

import pytest
from sandbox_support import READER, require_bwrap, workspace

from bastion import RunLimits

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


def _py(script: str) -> list[str]:
    return ["python3", "-c", script]


async def test_signals_ignored_and_output_closed_do_not_outlast_the_timeout() -> None:
    ws = await workspace(READER)
    for command in (
        "trap '' TERM INT HUP; sleep 30; touch /scratch/marker",
        "exec >&- 2>&- <&-; sleep 30; touch /scratch/marker",
    ):
        result = await ws.run(command, timeout=1)
        assert (result.limit, result.exit_code, result.changed) == ("timeout", None, ())
    assert not await ws.exists("/scratch/marker")


async def test_output_on_stderr_alone_is_capped_and_input_fed_while_echoed_does_not_block() -> None:
    ws = await workspace(READER)
    flood = await ws.run("yes >&2", limits=RunLimits(output_bytes=50_000), timeout=30)
    assert flood.limit == "output" and flood.stderr_truncated and len(flood.stderr) == 50_000
    assert flood.stdout == ""
    data = "0123456789" * 500_000  # 5 MB in, 5 MB out, both larger than any pipe
    echoed = await ws.run("cat", stdin=data, limits=RunLimits(output_bytes=6_000_000), timeout=60)
    assert echoed.exit_code == 0 and echoed.stdout == data
    cut = await ws.run("cat", stdin=data, limits=RunLimits(output_bytes=100_000), timeout=60)
    assert cut.limit == "output" and len(cut.stdout) == 100_000


async def test_shared_memory_and_threads_are_counted() -> None:
    ws = await workspace(READER)
    shared = await ws.run(
        _py(
            "import mmap\n"
            "try:\n"
            "    mmap.mmap(-1, 3 << 30, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)\n"
            "    print('mapped')\n"
            "except OSError as e:\n"
            "    print(e.strerror)\n"
        ),
        limits=RunLimits(memory_bytes=1 << 30),
    )
    assert shared.stdout == "Cannot allocate memory\n"
    threads = await ws.run(
        _py(
            "import threading, time\n"
            "n = 0\n"
            "try:\n"
            "    for n in range(5000):\n"
            "        threading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n"
            "except RuntimeError:\n"
            "    pass\n"
            "print(n)\n"
        ),
        # the process limit counts the sandbox user's processes host-wide (other sandboxes
        # too): room there, so the memory limit is what stops them (each stack reserves 8 MiB)
        limits=RunLimits(processes=4096, memory_bytes=1 << 30),
        timeout=30,
    )
    assert threads.exit_code == 0 and int(threads.stdout) < 200


async def test_a_file_with_no_name_from_birth_counts_against_the_written_limit() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        _py(
            "import os, time\n"
            "open('/scratch/kept', 'w').write('k')\n"
            "fd = os.open('/scratch', os.O_TMPFILE | os.O_WRONLY)\n"
            "for _ in range(24):\n"
            "    os.write(fd, b'z' * (1 << 20))\n"
            "time.sleep(3)\n"
        ),
        limits=RunLimits(written_bytes=8 << 20),
        timeout=30,
    )
    assert result.limit == "written" and result.changed == ()
    assert "/scratch/kept" in result.refused


async def test_proc_and_dev_shm_give_nothing_away() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "echo x > /proc/sys/kernel/hostname 2>/dev/null || echo ro-sys; "
        "echo 1 > /proc/sysrq-trigger 2>/dev/null || echo ro-sysrq; "
        "grep CapEff /proc/self/status; "
        "head -c 64M /dev/zero > /dev/shm/a 2>/dev/null; head -c 64M /dev/zero > /dev/shm/b "
        "2>/dev/null; head -c 64M /dev/zero > /dev/shm/c 2>/dev/null; "
        "df -k /dev/shm | tail -1",
        limits=RunLimits(tmp_bytes=100 << 20, file_bytes=64 << 20),
        timeout=30,
    )
    lines = result.stdout.splitlines()
    assert lines[:3] == ["ro-sys", "ro-sysrq", "CapEff:\t0000000000000000"]
    size_k = int(lines[3].split()[1])
    assert size_k <= 100 * 1024  # /dev/shm is the /tmp tmpfs, bounded by tmp_bytes
    assert result.changed == ()


async def test_a_double_fork_into_a_new_session_dies_with_the_command() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "setsid sh -c '(sleep 2; echo late > /scratch/late) &'; "
        "(setsid nohup sh -c 'sleep 2; echo late > /scratch/late2' >/dev/null 2>&1 &); echo hi",
        timeout=10,
    )
    assert result.exit_code == 0 and result.stdout == "hi\n" and result.changed == ()
    again = await ws.run("sleep 3; ls /scratch", timeout=10)
    assert "late" not in again.stdout
    assert not await ws.exists("/scratch/late") and not await ws.exists("/scratch/late2")


async def test_system_names_replaced_at_the_root_and_filled_count_as_written() -> None:
    # the view's root is the command's to change: /tmp and /bin are links it may remove and
    # make again as folders on the host's disk, outside every mount
    ws = await workspace(READER)
    result = await ws.run(
        "rm /tmp /bin && mkdir /tmp /bin && for i in 1 2 3 4 5 6; do "
        "head -c 4M /dev/zero > /tmp/f$i; head -c 4M /dev/zero > /bin/f$i; done; sleep 3; "
        "echo x > /scratch/ok",
        limits=RunLimits(written_bytes=4 << 20),
        timeout=30,
    )
    assert result.limit == "written" and result.changed == ()
    again = await ws.run("ls -ld /tmp; touch /newtop; ls /", timeout=30)
    assert again.stdout.startswith("lrwxrwxrwx")  # a fresh view: /tmp is the link again
    assert again.refused == {
        "/newtop": "/newtop is not under any mount; mounted: /docs, /out, /scratch"
    }
