"""Red team of what a command inherits, with real bubblewrap: no descriptor of Bastion's own
(a bound folder's, the seccomp filter's, bubblewrap's report pipes, the egress gate's) reaches
the command or the sandbox's PID 1, where ``openat(fd, "..")`` would lead out of the view.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from sandbox_support import require_bwrap

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.sandbox import RunLimits

_LIST = (
    "import os\n"
    "for pid in ('self', '1'):\n"
    "    for fd in sorted(os.listdir(f'/proc/{pid}/fd'), key=int):\n"
    "        try:\n"
    "            print(pid, fd, os.readlink(f'/proc/{pid}/fd/{fd}'))\n"
    "        except OSError:\n"
    "            pass\n"
)


@pytest.mark.parametrize("network", ["none", "allow-list"])
async def test_only_the_standard_streams_reach_the_command(network: str) -> None:
    require_bwrap()
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        (folder / "a.txt").write_text("bound\n")
        (folder / "a.txt").chmod(0o644)
        ws = Workspace(
            [
                Mount.of("/s", MemoryStore()),
                Mount.of("/loc", LocalStore(folder), scope="read_only"),
            ],
            policy=Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**"))),
            principal=Principal.of("agent"),
        )
        limits = RunLimits() if network == "none" else RunLimits(network=["example.com"])
        result = await ws.run(["python3", "-c", _LIST], cwd="/s", limits=limits, timeout=30)
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    assert result.exit_code == 0, result.stderr
    for line in result.stdout.splitlines():
        _, fd, target = line.split(" ", 2)
        if int(fd) > 2 and not target.startswith("pipe:") and target != "/dev/null":
            # the listing's own descriptor of /proc/<pid>/fd is the only other one
            assert target.startswith("/proc/") and target.endswith("/fd"), line
    assert str(folder) not in result.stdout and "/bastion-sandbox-" not in result.stdout
    assert not [line for line in result.stdout.splitlines() if "socket:" in line]
