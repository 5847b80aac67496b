"""More of the escape suite: the host's processes, hard links, device nodes, filling the disk,
processes that outlive the call, signals to the host, and guessing a hidden file's name.

Real bubblewrap, real processes (host processes started here are real ``sleep``s, ended by
their id at the end). Skipped only where bubblewrap cannot run here (the skip says why).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import OWNER, READER, require_bwrap, workspace

from bastion import PolicyDeniedError, WriteMode
from bastion.sandbox import RunLimits
from bastion.sandbox.bwrap import sandbox_ids

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


@pytest.fixture
def host_sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two host ``sleep`` processes: one as the caller, one as the sandbox's own user (the
    one a signal from inside would reach first if the PID namespace did not hold)."""
    ids = sandbox_ids()
    procs = [subprocess.Popen(["sleep", "60"])]
    if ids is not None:
        procs.append(
            subprocess.Popen(
                ["sleep", "60"],
                user=ids[0],
                group=ids[1],
                extra_groups=[],
            )
        )
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _view_folders(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The private host folders the runs make from now on (recorded as they are made)."""
    made: list[Path] = []
    real = tempfile.mkdtemp

    def recording(*args: Any, **kwargs: Any) -> str:
        folder = real(*args, **kwargs)
        if "bastion-sandbox-" in folder:
            made.append(Path(folder))
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", recording)
    return made


# -- processes ---------------------------------------------------------------------------------


async def test_proc_1_is_the_sandbox_not_the_host_init(
    host_sleepers: list[subprocess.Popen[bytes]],
) -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "head -n 1 /proc/1/status; ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo;"
        " for p in /proc/[0-9]*; do cat $p/cmdline | tr '\\0' ' '; echo; done"
    )
    lines = result.stdout.splitlines()
    # PID 1 is the sandbox's small shell that started the command; the host's is init/systemd
    assert lines[0] == "Name:\tsh"
    pids = {int(p) for p in lines[1].split()}
    assert len(pids) < 10  # the shell and its pipeline: nothing of the host's
    assert "sleep" not in result.stdout and "pytest" not in result.stdout
    assert all(_alive(p.pid) for p in host_sleepers)


async def test_kill_minus_one_inside_does_not_touch_host_processes(
    host_sleepers: list[subprocess.Popen[bytes]],
) -> None:
    ws = await workspace(READER)
    pids = " ".join(str(p.pid) for p in host_sleepers)
    result = await ws.run(
        f"kill -9 -1; kill -9 {pids} {os.getpid()}; kill -TERM -1; echo still here",
        timeout=10,
    )
    assert "still here" in result.stdout
    assert "No such process" in result.stderr
    assert all(_alive(p.pid) for p in host_sleepers)
    assert _alive(os.getpid())


async def test_a_detached_process_that_ignores_signals_dies_with_the_call() -> None:
    marker = f"bastion-{uuid.uuid4().hex}"
    ws = await workspace(READER)
    result = await ws.run(
        'setsid sh -c \'trap "" HUP TERM INT; '
        f"sleep 2; echo late > /scratch/late.txt; sleep 60 # {marker}' "
        "</dev/null >/dev/null 2>&1 & echo detached"
    )
    assert result.exit_code == 0 and result.stdout == "detached\n"
    assert _processes_mentioning(marker) == []
    assert result.changed == ()
    assert not await ws.exists("/scratch/late.txt")


# -- links and devices ------------------------------------------------------------------------


async def test_hard_links_reach_nothing_outside_and_come_back_as_plain_copies() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "ln /docs/open.md /scratch/open.md; ln /usr/bin/env /scratch/env;"
        " ln /scratch/a.txt /scratch/twin.txt && echo more >> /scratch/twin.txt"
    )
    # other mounts are other file systems to the command: a hard link across fails
    assert result.stderr.count("Invalid cross-device link") == 2
    assert sorted(result.changed) == ["/scratch/a.txt", "/scratch/twin.txt"]
    # a link inside the view is two files to the workspace, each written on its own
    assert await ws.read_text("/scratch/twin.txt") == "alpha\nmore\n"
    assert await ws.read_text("/scratch/a.txt") == "alpha\nmore\n"
    assert await ws.read_text("/docs/open.md") == "# Open\n\nThe canteen opens at nine.\n"
    assert not await ws.exists("/scratch/open.md")
    assert not await ws.exists("/scratch/env")


async def test_device_nodes_cannot_be_made_and_dev_is_minimal() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "mknod /scratch/mem c 1 1; mknod /tmp/sda b 8 0; mkfifo /tmp/ok; ls /dev | tr '\\n' ' '"
    )
    assert result.stderr.count("Operation not permitted") == 2
    assert set(result.stdout.split()) <= {
        "core", "fd", "full", "null", "ptmx", "pts", "random", "shm",
        "stderr", "stdin", "stdout", "tty", "urandom", "zero",
    }  # fmt: skip
    assert result.changed == () and result.refused == {}
    assert not await ws.exists("/scratch/mem")


# -- filling the disk ---------------------------------------------------------------------------


async def test_filling_tmp_hits_its_size_and_the_host_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = await workspace(READER)
    folders = _view_folders(monkeypatch)
    result = await ws.run(
        "for i in 1 2 3 4; do head -c 1048576 /dev/zero > /tmp/f$i || break; done; ls /tmp | wc -l",
        limits=RunLimits(tmp_bytes=2 * 1024 * 1024, file_bytes=8 * 1024 * 1024),
    )
    assert "No space left on device" in result.stderr
    assert int(result.stdout.split()[-1]) <= 3
    assert result.changed == () and result.refused == {}
    assert len(folders) == 1 and not folders[0].exists()  # the private folder is gone


async def test_filling_the_view_hits_the_file_size_limit() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "head -c 4194304 /dev/zero > /scratch/big.bin; echo status=$?",
        limits=RunLimits(file_bytes=1024 * 1024),
    )
    assert "File size limit exceeded" in result.stderr
    assert f"status={128 + signal.SIGXFSZ}" in result.stdout
    # the command went on after the write failed: what it left comes back, cut at the limit
    assert result.changed == ("/scratch/big.bin",)
    assert (await ws.stat("/scratch/big.bin")).size == 1024 * 1024


# -- guessing hidden names ----------------------------------------------------------------------


async def test_another_principals_hidden_file_cannot_be_reached_by_its_name() -> None:
    owner = await workspace(OWNER)
    await owner.write("/scratch/hr-only.md", "---\nroles: [hr]\n---\nosprey salary\n")
    ws = owner.with_principal(READER)
    result = await ws.run(
        "cat /scratch/hr-only.md /docs/pay.md /docs/plan.txt /docs/plan.txt.labels.yaml;"
        " stat /scratch/hr-only.md; ls -a /scratch /docs; grep -r osprey /scratch /docs;"
        " echo guess > /scratch/hr-only.md"
    )
    blob = result.stdout + result.stderr + repr(result.refused)
    assert "osprey" not in blob and "zebra" not in blob
    assert result.stderr.count("No such file or directory") == 5
    assert "hr-only" not in result.stdout and "pay.md" not in result.stdout
    # writing the guessed name is refused with the guard's own words, nothing overwritten
    with pytest.raises(PolicyDeniedError) as direct:
        await ws.write("/scratch/hr-only.md", "guess\n", mode=WriteMode.CREATE)
    assert result.refused == {"/scratch/hr-only.md": str(direct.value)}
    assert await owner.read_text("/scratch/hr-only.md") == "---\nroles: [hr]\n---\nosprey salary\n"
