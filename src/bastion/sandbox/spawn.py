"""The running sandbox: bubblewrap started with its limits, its input fed and its output
read while it runs, the limits polled, and the one kill that ends the whole tree at once
(:meth:`Tree.kill`). bubblewrap's arguments come from ``bastion.sandbox.bwrap``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bastion.sandbox.bwrap import sandbox_ids, start_failed
from bastion.sandbox.result import RunLimits

__all__ = ["Outcome", "Tree", "exit_status", "kill_tree", "spawn", "start_background"]

_CHUNK = 65536
_DRAIN_SECONDS = 5.0
_POLL_SECONDS = 0.25
_REAP_SECONDS = 5.0
"""How long bubblewrap gets to exit by itself after its namespace's PID 1 is killed."""


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
    """A started sandbox: bubblewrap (the caller's child) and, under it, the PID 1 of the
    sandbox's PID namespace (``--as-pid-1``: the shell that starts the command), held by a
    pidfd once bubblewrap has reported it."""

    pid: int
    """bubblewrap's process id (a child of the caller, reaped by the caller)."""
    init: int | None = None
    """A pidfd of the namespace's PID 1; ``None`` when bubblewrap reported none."""
    init_pid: int | None = None
    """That process's id on the host (to read its root through ``/proc``)."""
    pidns: int | None = None
    """The inode of the sandbox's PID namespace (its processes are found by it in ``/proc``)."""
    reported: bool = False
    """bubblewrap reported its child: the sandbox was made (``False``: bubblewrap failed
    first, and what it wrote on its error stream is its own words, which name host paths)."""

    def kill(self) -> None:
        """End every process of the command at once: SIGKILL to the namespace's PID 1. When a
        PID namespace's PID 1 dies, the kernel sends SIGKILL to every other process of the
        namespace in one pass under the task-list lock (none forks meanwhile; the pass takes
        less time than a killed process takes to exit, so one that a sibling's end would wake
        already has its own kill pending; PID 1 holds nothing but the standard streams the
        others share, so none sees its end), reaps them all,
        and only then lets PID 1's parent, bubblewrap, see its end; bubblewrap reaps it and
        exits. So no process of the command runs on after a sibling dies, and none is left as
        a zombie. Without a pidfd (bubblewrap died or was killed before reporting), bubblewrap's
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
        child = int(info["child-pid"])
    except (ValueError, KeyError, TypeError):
        return tree
    tree.reported = True
    try:
        pidns = int(info["pid-namespace"])
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
    except OSError as exc:
        os.close(read_end)
        raise start_failed(type(exc).__name__, f"{exc} ({args[0]})") from None
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    tree = _started(read_end, popen.pid)
    if not tree.reported:  # bubblewrap failed before making the sandbox: its words are its own
        try:
            _, words = popen.communicate(timeout=_REAP_SECONDS)
        except subprocess.TimeoutExpired:
            popen.kill()
            _, words = popen.communicate()
        raise start_failed(f"exit {popen.returncode}", words.decode("utf-8", "replace").strip())
    return popen, tree


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
    proc, read_end = await _start(args, stdin, limits, pass_fds)
    reading = asyncio.ensure_future(asyncio.to_thread(_started, read_end, proc.pid))
    tree = Tree(proc.pid)
    cut = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    out = asyncio.ensure_future(_capped(proc.stdout, limits.output_bytes, cut))
    err = asyncio.ensure_future(_capped(proc.stderr, limits.output_bytes, cut))
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
        for task in (capped, filled):
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
    if limit is None and not tree.reported:  # bubblewrap failed before making the sandbox
        raise start_failed(f"exit {code}", stderr.decode("utf-8", "replace").strip())
    exit_code, sig = _status(code, killed=limit is not None)
    return Outcome(exit_code, sig, duration, stdout, stderr, out_cut, err_cut, limit)


async def _start(
    args: list[str], stdin: bytes | None, limits: RunLimits, pass_fds: Sequence[int]
) -> tuple[asyncio.subprocess.Process, int]:
    """Start bubblewrap reporting on a pipe (``--info-fd``), its input fed by a thread of its
    own; the process and the pipe's read end (for :func:`_started`)."""
    read_end, write_end = os.pipe()
    given, feed = os.pipe() if stdin is not None else (None, None)
    try:
        proc = await asyncio.create_subprocess_exec(
            *_with_info(args, write_end),
            stdin=subprocess.DEVNULL if given is None else given,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **_process_options(limits, (*pass_fds, write_end)),
        )
    except BaseException as exc:
        os.close(read_end)
        if feed is not None:
            os.close(feed)
        if isinstance(exc, OSError):
            raise start_failed(type(exc).__name__, f"{exc} ({args[0]})") from None
        raise
    finally:
        os.close(write_end)
        if given is not None:
            os.close(given)
    if feed is not None and stdin is not None:
        threading.Thread(target=_feed, args=(feed, stdin), daemon=True).start()
    return proc, read_end


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


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to the command's input while it runs, then close it (a thread of its
    own): a command that stops reading, or never reads, blocks only this thread, never the
    clock, and the write fails once the tree has ended (no reader left)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:_CHUNK]) :]
    except OSError:
        pass  # the command ended, or closed its input
    finally:
        os.close(fd)


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
