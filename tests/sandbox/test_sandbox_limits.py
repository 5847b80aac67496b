"""The written-bytes limit, the network switch, the seccomp filter and the command in the
audit record.

Real bubblewrap and real processes (skipped only where bubblewrap cannot run here, and the
skip says why); the seccomp program is also checked as bytes against its own layout.
"""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
from sandbox_support import READER, require_bwrap, workspace

from bastion import (
    MemoryAuditSink,
    MemoryStore,
    Mount,
    Policy,
    PolicyDeniedError,
    Rule,
    RunLimits,
    SandboxError,
    Workspace,
)
from bastion.sandbox.seccomp import DENIED, filter_program

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


# -- written bytes ---------------------------------------------------------------------------


async def test_many_files_over_the_written_limit_bring_nothing_back() -> None:
    ws = await workspace(READER)
    limits = RunLimits(written_bytes=200_000, file_bytes=100_000)
    result = await ws.run(
        "echo changed >> /scratch/a.txt; "
        "for i in $(seq 1 50); do head -c 50000 /dev/zero > /scratch/f$i; done; sleep 20",
        timeout=60,
        limits=limits,
    )
    assert result.limit == "written" and result.exit_code is None
    assert result.changed == () and result.deleted == ()
    assert "/scratch/a.txt" in result.refused
    assert all("written-bytes limit" in why for why in result.refused.values())
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"  # nothing partially written back
    assert [e.path.name for e in await ws.list("/scratch")] == ["a.txt", "sub"]


async def test_a_command_that_ends_over_the_written_limit_brings_nothing_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no meter while it runs (a first poll that came after the write, on a loaded machine,
    # killed the command and made this test a race): only the check after the command can
    # catch it
    async def never(over: object) -> str:
        await asyncio.Event().wait()
        return "never"

    monkeypatch.setattr("bastion.sandbox.spawn._meter", never)
    ws = await workspace(READER)
    result = await ws.run(
        "head -c 3000 /dev/zero > /scratch/big; echo ok",
        limits=RunLimits(written_bytes=2000),
    )
    assert result.stdout == "ok\n"
    assert result.limit == "written" and result.exit_code == 0 and not result.ok
    assert result.changed == () and set(result.refused) == {"/scratch/big"}
    assert not await ws.exists("/scratch/big")


async def test_under_the_written_limit_every_change_comes_back() -> None:
    ws = await workspace(READER)
    result = await ws.run(  # two files touched: two 4 KiB blocks
        "head -c 1500 /dev/zero > /scratch/big; echo more >> /scratch/a.txt",
        limits=RunLimits(written_bytes=8192),
    )
    assert result.ok and set(result.changed) == {"/scratch/big", "/scratch/a.txt"}
    assert len(await ws.read_bytes("/scratch/big")) == 1500


async def test_many_empty_files_count_against_the_written_limit() -> None:
    ws = await workspace(READER)
    result = await ws.run(
        "mkdir /scratch/many && cd /scratch/many && for i in $(seq 1 200); do : > f$i; done; "
        "sleep 20",
        timeout=60,
        limits=RunLimits(written_bytes=100 * 4096),
    )
    assert result.limit == "written" and result.changed == ()
    assert not await ws.exists("/scratch/many")


# -- network ---------------------------------------------------------------------------------


def _listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(5)
    return listener


_CONNECT = (
    "import socket, sys\n"
    "for host, port in [(h, int(p)) for h, p in (a.split(':') for a in sys.argv[1:])]:\n"
    "    try:\n"
    "        socket.create_connection((host, port), timeout=2).close(); print(host, 'open')\n"
    "    except OSError as exc:\n"
    "        print(host, 'unreachable', exc.errno)\n"
)


async def test_loopback_and_external_addresses_are_unreachable_by_default() -> None:
    with _listener() as listener:
        port = listener.getsockname()[1]
        ws = await workspace(READER)
        result = await ws.run(
            ["python3", "-c", _CONNECT, f"127.0.0.1:{port}", "1.1.1.1:443", "10.0.0.1:80"]
        )
        listener.settimeout(0)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["127.0.0.1", "unreachable"],
        ["1.1.1.1", "unreachable"],
        ["10.0.0.1", "unreachable"],
    ], result.stderr
    resolve = await ws.run(
        ["python3", "-c", "import socket; socket.getaddrinfo('example.com', 80)"]
    )
    assert resolve.exit_code != 0 and "gaierror" in resolve.stderr


async def test_the_network_switch_shares_the_hosts_network() -> None:
    with _listener() as listener:
        port = listener.getsockname()[1]
        ws = await workspace(READER)
        result = await ws.run(
            ["python3", "-c", _CONNECT, f"127.0.0.1:{port}"],
            limits=RunLimits(network=True),
        )
        conn, _ = listener.accept()  # the command reached the host's loopback
        conn.close()
    assert result.stdout == "127.0.0.1 open\n"
    etc = await ws.run("ls /etc /etc/ssl", limits=RunLimits(network=True))
    assert "hosts" in etc.stdout.split()
    assert "shadow" not in etc.stdout.split() and "passwd" not in etc.stdout.split()
    assert "private" not in etc.stdout.split()  # certificates only, no private keys
    assert etc.changed == ()  # /etc is the sandbox's, never written back


async def test_with_the_network_shared_a_workspace_etc_collides() -> None:
    ws = Workspace(
        [Mount.of("/etc", MemoryStore())],
        policy=Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**"))),
    )
    await ws.write("/etc/app.conf", "x")
    assert (await ws.run(["cat", "/etc/app.conf"])).stdout == "x"
    with pytest.raises(SandboxError, match="/etc in the workspace collides"):
        await ws.run(["true"], limits=RunLimits(network=True))


# -- seccomp ---------------------------------------------------------------------------------

_SYSCALL = (
    "import ctypes, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "for nr, *args in [[int(x) for x in a.split(',')] for a in sys.argv[1:]]:\n"
    "    r = libc.syscall(nr, *args)\n"
    "    print(nr, r, ctypes.get_errno() if r == -1 else 0)\n"
)


def test_the_filter_program_is_well_formed() -> None:
    for machine in ("x86_64", "aarch64"):
        program = filter_program(machine)
        assert program is not None and len(program) % 8 == 0
        ops = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
        assert len(ops) < 4096  # the kernel's BPF_MAXINSNS
        for index, (code, jt, jf, _) in enumerate(ops):
            if code & 0x07 == 0x05:  # a jump lands inside the program
                assert index + 1 + max(jt, jf) < len(ops)
        assert ops[-1] == (0x06, 0, 0, 0x7FFF0000)  # the last word allows
    assert filter_program("riscv64") is None
    assert {"ptrace", "bpf", "keyctl", "io_uring_setup"} <= set(DENIED)


@pytest.mark.skipif(filter_program() is None, reason="no seccomp table for this architecture")
async def test_the_seccomp_filter_denies_what_commands_over_files_do_not_need() -> None:
    import platform

    x86 = platform.machine() == "x86_64"
    ptrace, mount, keyctl, bpf, perf, unshare, clone3, getpid = (
        (101, 165, 250, 321, 298, 272, 435, 39) if x86 else (117, 40, 219, 280, 241, 97, 435, 172)
    )
    io_uring_setup = 425
    ws = await workspace(READER)
    result = await ws.run(
        [
            "python3",
            "-c",
            _SYSCALL,
            f"{ptrace},0,0,0,0",  # PTRACE_TRACEME
            f"{mount},0,0,0,0,0",
            f"{keyctl},0,0,0,0,0",  # KEYCTL_GET_KEYRING_ID
            f"{bpf},0,0,0",
            f"{perf},0,0,0,0,0",
            f"{unshare},{0x10000000}",  # CLONE_NEWUSER
            f"{clone3},0,0",
            f"{io_uring_setup},1,0",
            f"{getpid}",
        ]
    )
    rows = {int(line.split()[0]): line.split()[1:] for line in result.stdout.splitlines()}
    for nr in (ptrace, mount, keyctl, bpf, perf, unshare, io_uring_setup):
        assert rows[nr] == ["-1", "1"], (nr, result.stdout, result.stderr)  # EPERM
    assert rows[clone3] == ["-1", "38"]  # ENOSYS: the C library falls back to clone
    assert int(rows[getpid][0]) > 0  # ordinary calls still work
    nested = await ws.run("unshare -U true; echo $?")
    assert nested.stdout.strip() != "0" and "Operation not permitted" in nested.stderr
    ordinary = await ws.run("python3 -c 'import os; print(os.fork() > 0 or 0)'; sh -c 'echo ok'")
    assert "ok" in ordinary.stdout and ordinary.exit_code == 0


# -- audit -----------------------------------------------------------------------------------


async def test_the_audit_record_of_a_run_names_the_command() -> None:
    sink = MemoryAuditSink()
    rules = (Rule.allow("execute", "/scratch/**", "/scratch"), Rule.allow("*", "/**"))
    ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=Policy(rules=rules), audit=sink)
    await ws.run(["echo", "hello world"], cwd="/scratch")
    await ws.run("ls | wc -l", cwd="/scratch")
    with pytest.raises(PolicyDeniedError):
        await ws.run(["rm", "-rf", "x"], cwd="/")
    runs = [r for r in sink.records if r.operation == "run"]
    assert [(r.path, r.allowed) for r in runs] == [
        ("/scratch", True),
        ("/scratch", True),
        ("/", False),
    ]
    assert runs[0].reason == "allowed; command: echo 'hello world'"
    assert runs[1].reason == "allowed; command: /bin/sh -c 'ls | wc -l'"
    assert runs[2].reason.endswith("; command: rm -rf x")
