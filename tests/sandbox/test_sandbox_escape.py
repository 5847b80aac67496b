"""The escape suite's basics: what a command must not reach, and limits that end it.

Each case runs a real command in real bubblewrap and checks that nothing escaped: host files
stay unreadable, the network is unreachable, changes to read-only mounts and links pointing out
never come back, and a runaway command is killed with its whole process tree, with a clear
result. Skipped only where bubblewrap cannot run here (the skip says why).
"""

from __future__ import annotations

import signal
import socket
import uuid
from pathlib import Path

import pytest
from sandbox_support import READER, require_bwrap, workspace

from bastion.sandbox import RunLimits

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


def _processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


async def test_host_files_are_not_there(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("kestrel\n")
    ws = await workspace(READER)
    result = await ws.run(
        f"cat /etc/shadow; cat /etc/passwd; cat {secret}; ls /work /root /home; echo done"
    )
    assert result.stdout == "done\n"
    assert "kestrel" not in result.stderr
    assert result.stderr.count("No such file or directory") == 6


async def test_the_host_environment_is_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASTION_TEST_TOKEN", "s3cr3t")
    ws = await workspace(READER)
    result = await ws.run(["env"], env={"GREETING": "hi"})
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert "s3cr3t" not in result.stdout
    assert names <= {"PATH", "LANG", "HOME", "GREETING", "PWD", "SHLVL", "_"}
    assert "HOME=/tmp" in result.stdout.splitlines()


async def test_the_network_is_unreachable_even_on_loopback() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        ws = await workspace(READER)
        result = await ws.run(
            ["bash", "-c", f"echo hello > /dev/tcp/127.0.0.1/{port} && echo connected"]
        )
        assert "connected" not in result.stdout
        assert result.exit_code != 0
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    interfaces = await ws.run(["cat", "/proc/net/dev"])
    assert {line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]} == {"lo"}


async def test_writes_into_a_read_only_mount_fail_and_nothing_comes_back() -> None:
    ws = await workspace(READER)
    result = await ws.run("echo x > /docs/new.md; rm /docs/open.md; echo y >> /docs/open.md")
    assert result.stderr.count("Read-only file system") == 3
    assert result.changed == () and result.deleted == () and result.refused == {}
    assert not await ws.exists("/docs/new.md")
    assert await ws.read_text("/docs/open.md") == "# Open\n\nThe canteen opens at nine.\n"


async def test_links_pointing_out_are_refused_never_followed() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "ln -s /etc/passwd /scratch/passwd; rm /scratch/a.txt; ln -s /etc/hostname /scratch/a.txt;"
        " mkfifo /scratch/pipe"
    )
    assert set(result.refused) == {"/scratch/passwd", "/scratch/a.txt", "/scratch/pipe"}
    assert "symbolic link" in result.refused["/scratch/passwd"]
    assert not await ws.exists("/scratch/passwd")
    assert not await ws.exists("/scratch/pipe")
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"
    assert result.deleted == ()


async def test_a_timeout_kills_the_whole_tree() -> None:
    marker = f"bastion-{uuid.uuid4().hex}"
    ws = await workspace(READER)
    result = await ws.run(
        "echo half > /scratch/partial.txt; "
        f"sh -c 'sleep 60; echo {marker}' & sh -c 'sleep 60; echo {marker}' & echo started; wait",
        timeout=1,
    )
    assert result.limit == "timeout"
    assert result.exit_code is None and result.signal == signal.SIGKILL
    assert result.stdout == "started\n"
    assert _processes_mentioning(marker) == []
    assert "killed by the timeout limit" in result.refused["/scratch/partial.txt"]
    assert not await ws.exists("/scratch/partial.txt")


async def test_processes_left_in_the_background_do_not_outlive_the_call() -> None:
    marker = f"bastion-{uuid.uuid4().hex}"
    ws = await workspace(READER)
    result = await ws.run(f"(sh -c 'sleep 60; echo {marker}' &) ; echo left")
    assert result.exit_code == 0 and result.stdout == "left\n"
    assert _processes_mentioning(marker) == []


async def test_a_fork_bomb_hits_the_process_limit_and_is_killed() -> None:
    marker = f"bomb{uuid.uuid4().hex[:12]}"
    ws = await workspace(READER)
    result = await ws.run(
        f"{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 30",
        timeout=2,
        limits=RunLimits(processes=64),
    )
    assert "Cannot fork" in result.stderr  # the process limit bit
    # the shell either gave up (its own fork failed) or was killed at the timeout
    assert result.limit == "timeout" or result.exit_code != 0
    assert _processes_mentioning(marker) == []


async def test_huge_output_is_capped_and_the_command_killed() -> None:
    ws = await workspace(READER)
    result = await ws.run(["yes"], limits=RunLimits(output_bytes=1000), timeout=20)
    assert result.limit == "output"
    assert result.stdout_truncated and not result.stderr_truncated
    assert len(result.stdout) == 1000
    assert result.signal == signal.SIGKILL
