"""Background processes: a sandboxed command that keeps running after the call that started it.

A process is started like ``Workspace.run`` (the same view, bubblewrap arguments, limits and
seccomp filter) but returns at once with an id. Its owner (the principal that started it) can
list it, read its output from any offset (the last ``RunLimits.output_bytes`` of each stream
are kept), send it input, write its changes back while it runs, and kill it. To any other
principal it does not exist: every call by id answers :class:`~bastion.core.errors.NotFoundError`
exactly as for an id never used.

What it changes comes back through the same guarded write path as a run's (``runner.Prepared
.bring_back``), as its owner: when it exits on its own, or on an explicit
:meth:`Processes.write_back`. A process killed (by its owner, by its wall timeout, by the
written-bytes limit, or because the workspace closed) brings nothing back: its files may be
half-written.

Pipes are drained and the exit is awaited by threads, so a process keeps running (and its
output keeps being kept) whether or not an event loop runs between calls (the blocking facade
runs one only during a call). The write-back at exit is scheduled on the loop that started the
process; any later call about the process finishes it first if it has not run yet.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import hashlib
import os
import secrets
import shlex
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Literal

from bastion.core.errors import NotFoundError, OperationError
from bastion.core.paths import VPath
from bastion.sandbox.approval import Review, screen
from bastion.sandbox.egress import Recorder
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.process_info import OutputBuffer, OutputChunk, ProcessInfo, Stream, drain
from bastion.sandbox.result import RunLimits, SandboxError
from bastion.sandbox.runner import Prepared, argv_of, prepare
from bastion.sandbox.spawn import exit_status, kill_tree, start_background
from bastion.sandbox.tree import remove_tree
from bastion.sandbox.view import Copied, diff
from bastion.sandbox.writeback import Applied, write_back

__all__ = ["OutputChunk", "ProcessInfo", "Processes", "Stream"]

_CHUNK = 65536
_POLL_SECONDS = 0.25
_KEEP_ENDED = 32
"""Ended processes kept per owner (for their output and result); the oldest go first."""
_SHOWN = 200


class _Process:
    """One background process: its bubblewrap, view, output and result."""

    def __init__(
        self,
        pid: str,
        owner: tuple[str, str],
        ws: SandboxWorkspace,
        argv: Sequence[str],
        cwd: VPath,
        prepared: Prepared,
        timeout: float,
    ) -> None:
        self.id = pid
        self.owner = owner
        self.ws = ws
        shown = shlex.join(argv)
        self.command = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
        self.cwd = str(cwd)
        self.prepared = prepared
        limits = prepared.limits
        self.out = OutputBuffer(limits.output_bytes)
        self.err = OutputBuffer(limits.output_bytes)
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.ended: float | None = None
        self.limit: str | None = None
        self.code: int | None = None
        self.applied = Applied()
        self.killed = False
        self.done = False
        """True once the end was handled (changes written back or held back, view removed)."""
        self.lock = asyncio.Lock()
        self.loop = asyncio.get_running_loop()
        self.finishing: asyncio.Task[None] | None = None
        self.proc, prepared.tree = start_background(prepared.args, limits, prepared.fds)
        prepared.close_fds()  # bubblewrap holds its own copies now
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.readers = [
            threading.Thread(target=drain, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=drain, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        threading.Thread(target=_watch, args=(weakref.ref(self), self.proc), daemon=True).start()

    # -- the end -----------------------------------------------------------------------------

    def kill(self, limit: str) -> None:
        """Kill the whole tree at once (any thread); the first reason given is the one kept.
        bubblewrap then exits by itself (``self.proc.wait()``)."""
        if self.proc.poll() is not None or self.prepared.tree is None:
            return
        if self.limit is None:
            self.limit = limit
        self.killed = True
        kill_tree(self.prepared.tree)

    def exited(self) -> None:
        """Called by the watcher thread once bubblewrap is gone."""
        for reader in self.readers:
            reader.join(timeout=5)
        self.code = self.proc.returncode
        self.ended = time.monotonic()
        with contextlib.suppress(RuntimeError):  # the loop is closed: the next call finishes
            self.loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        if self.finishing is None:
            self.finishing = asyncio.ensure_future(self._finish())

    async def settle(self) -> None:
        """Handle the end now if the process has ended and it was not handled yet."""
        if self.done or self.ended is None:
            return
        task = self.finishing
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(task)
            return
        await self._finish()  # no task yet, or one on a loop that is gone

    async def _finish(self) -> None:
        async with self.lock:
            if self.done:
                return
            try:
                for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()
                limit, applied = await self.prepared.bring_back(self.ws, self.limit)
                self.limit = limit
                self._merge(applied)
            finally:
                await self.prepared.remove()
                self.done = True

    def _merge(self, applied: Applied) -> None:
        """Add one write-back's outcome; a path that came back now is no longer refused."""
        self.applied.changed += [p for p in applied.changed if p not in self.applied.changed]
        self.applied.deleted += [p for p in applied.deleted if p not in self.applied.deleted]
        for path in [*applied.changed, *applied.deleted]:
            self.applied.refused.pop(path, None)
        self.applied.refused.update(applied.refused)

    # -- while it runs -----------------------------------------------------------------------

    async def write_back_now(self) -> None:
        """Bring back what the view holds now (the process runs on); the view's snapshot then
        counts what came back as copied in, so the next write-back sends only what changes
        after this one."""
        async with self.lock:
            if self.done or self.proc.poll() is not None:
                return
            snap = self.prepared.snap
            if await asyncio.to_thread(self.prepared.written) > self.prepared.limits.written_bytes:
                self.kill("written")
                return
            changes = await screen(
                await asyncio.to_thread(functools.partial(diff, snap, live=True)),
                self.prepared.review,
            )
            applied = await write_back(self.ws, changes)
            for change in changes:
                key = change.key
                if change.kind == "write" and key in applied.changed:
                    try:
                        version = (await self.ws.stat(change.path)).version
                    except OperationError:
                        version = None
                    digest = hashlib.sha256(change.data).digest()
                    snap.files[change.path] = Copied(version, digest)  # no stamp: compared again
                elif change.kind == "mkdir":
                    snap.dirs.add(change.path)
                elif change.kind == "delete" and key in applied.deleted:
                    snap.files.pop(change.path, None)
                    snap.dirs.discard(change.path)
            self._merge(applied)

    def info(self) -> ProcessInfo:
        running = self.ended is None
        state: Literal["running", "exited", "killed"] = "running"
        code: int | None = None
        sig: int | None = None
        if not running:
            assert self.code is not None
            code, sig = exit_status(self.code, killed=self.killed)
            state = "killed" if self.killed else "exited"
        end = self.ended if self.ended is not None else time.monotonic()
        return ProcessInfo(
            id=self.id,
            command=self.command,
            cwd=self.cwd,
            state=state,
            exit_code=code,
            signal=sig,
            limit=self.limit,
            duration=round(end - self.started, 3),
            stdout_bytes=self.out.total,
            stderr_bytes=self.err.total,
            changed=tuple(self.applied.changed),
            deleted=tuple(self.applied.deleted),
            refused=dict(self.applied.refused),
        )


def _watch(ref: weakref.ref[_Process], popen: subprocess.Popen[bytes]) -> None:
    """Wait for the process to end, killing it at its deadline or past its written-bytes
    limit; then hand its end to the loop. Holds the process only weakly (and only between
    waits), so a workspace dropped while its processes run can still be collected, which
    kills them."""
    while True:
        try:
            popen.wait(timeout=_POLL_SECONDS)
        except subprocess.TimeoutExpired:
            proc = ref()
            if proc is None:
                return
            if time.monotonic() > proc.deadline:
                proc.kill("timeout")
            elif (limit := _over(proc)) is not None:
                proc.kill(limit)
            del proc
            continue
        proc = ref()
        if proc is not None:
            proc.exited()
        return


def _over(proc: _Process) -> str | None:
    """The limit the process is over (``Prepared.over``); a poll that fails (the view
    changing under the walk) counts as none: the next poll, and the check at the end,
    still hold."""
    try:
        return proc.prepared.over()
    except (OSError, RuntimeError, ValueError):
        return None


class Processes:
    """The background processes of one workspace, every principal's; each call names the
    principal asking, and sees only that principal's processes.

    ``max_running`` bounds the processes one principal may have running at once. When this
    object is collected (its workspace dropped), every process still running is killed.
    """

    def __init__(self, *, max_running: int = 8) -> None:
        self.max_running = max_running
        self._procs: dict[str, _Process] = {}
        self._handles: dict[str, tuple[subprocess.Popen[bytes], Prepared]] = {}
        """What the finalizer needs to kill and clean up, holding no workspace."""
        self._finalizer = weakref.finalize(self, _kill_all, self._handles)

    async def start(
        self,
        ws: SandboxWorkspace,
        owner: tuple[str, str],
        command: Sequence[str] | str,
        *,
        cwd: VPath,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 600.0,
        limits: RunLimits | None = None,
        review: Review | None = None,
        record: Recorder | None = None,
    ) -> ProcessInfo:
        """Start ``command`` over ``ws``'s view (``ws`` acts for ``owner``; the caller has
        checked ``execute`` on ``cwd``); it runs until it exits, ``timeout`` seconds pass,
        or it is killed. ``review`` and ``record`` as for
        :func:`~bastion.sandbox.runner.run_in_sandbox` (asked at each write-back)."""
        argv = argv_of(command)
        if timeout <= 0:
            raise ValueError("timeout must be positive (seconds)")
        running = [p for p in self._procs.values() if p.owner == owner and p.ended is None]
        if len(running) >= self.max_running:
            raise SandboxError(
                f"you have {len(running)} background processes running (the most allowed); "
                "kill one first"
            )
        prepared = await prepare(
            ws, argv, cwd=cwd, env=env, limits=limits or RunLimits(), review=review, record=record
        )
        try:
            pid = secrets.token_hex(4)
            while pid in self._procs:
                pid = secrets.token_hex(4)
            prepared.start_egress()
            proc = _Process(pid, owner, ws, argv, cwd, prepared, timeout)
        except BaseException:
            await prepared.remove()
            raise
        self._procs[proc.id] = proc
        self._handles[proc.id] = (proc.proc, prepared)
        self._forget_old(owner)
        if stdin:
            await self._send(proc, stdin.encode("utf-8") if isinstance(stdin, str) else stdin)
        return proc.info()

    async def list(self, owner: tuple[str, str]) -> builtins.list[ProcessInfo]:
        """``owner``'s processes, oldest first."""
        mine = [p for p in self._procs.values() if p.owner == owner]
        for proc in mine:
            await proc.settle()
        return [p.info() for p in mine]

    async def get(self, owner: tuple[str, str], pid: str) -> ProcessInfo:
        proc = self._find(owner, pid)
        await proc.settle()
        return proc.info()

    async def read(
        self,
        owner: tuple[str, str],
        pid: str,
        *,
        stream: Stream = "stdout",
        offset: int = 0,
        limit: int = _CHUNK,
    ) -> OutputChunk:
        """Up to ``limit`` bytes of ``stream`` from ``offset`` (0: the first byte printed)."""
        if stream not in ("stdout", "stderr"):
            raise ValueError("stream must be 'stdout' or 'stderr'")
        if offset < 0 or limit < 1:
            raise ValueError("offset must be 0 or more and limit at least 1")
        proc = self._find(owner, pid)
        await proc.settle()
        out = proc.out if stream == "stdout" else proc.err
        data, start, total = out.read(offset, limit)
        return OutputChunk(
            id=pid,
            stream=stream,
            text=data.decode("utf-8", "replace"),
            offset=start,
            next_offset=start + len(data),
            total=total,
            skipped=max(0, start - offset) if offset < start else 0,
            running=proc.ended is None,
        )

    async def send(
        self, owner: tuple[str, str], pid: str, data: str | bytes, *, close: bool = False
    ) -> int:
        """Write ``data`` to the process's input (``close``: then end it); the bytes taken.
        A process that does not read its input takes only what the pipe holds."""
        proc = self._find(owner, pid)
        await proc.settle()
        if proc.ended is not None:
            raise SandboxError(f"process {pid} has ended; it reads no more input")
        taken = await self._send(proc, data.encode("utf-8") if isinstance(data, str) else data)
        if close and proc.proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.proc.stdin.close()
        return taken

    async def _send(self, proc: _Process, data: bytes) -> int:
        stdin = proc.proc.stdin
        if stdin is None or stdin.closed:
            raise SandboxError(f"process {proc.id}'s input is closed")
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        taken = 0
        with contextlib.suppress(BlockingIOError, BrokenPipeError, OSError):
            while taken < len(data):
                taken += os.write(fd, data[taken : taken + _CHUNK])
        return taken

    async def kill(self, owner: tuple[str, str], pid: str) -> ProcessInfo:
        """Kill the process's whole tree; its changes not yet written back stay out."""
        proc = self._find(owner, pid)
        proc.kill("killed")
        await asyncio.to_thread(proc.proc.wait)
        while proc.ended is None:  # the watcher thread records the end
            await asyncio.sleep(0.01)
        await proc.settle()
        return proc.info()

    async def write_back(self, owner: tuple[str, str], pid: str) -> ProcessInfo:
        """Bring back what the process has changed so far (through the guard, as its owner);
        for a process that has ended, its result."""
        proc = self._find(owner, pid)
        await proc.settle()
        await proc.write_back_now()
        return proc.info()

    async def close(self, owner: tuple[str, str] | None = None) -> int:
        """Kill every running process (``owner``'s only, when given) and wait for each to be
        handled; the number killed."""
        chosen = [
            p
            for p in self._procs.values()
            if (owner is None or p.owner == owner) and p.ended is None
        ]
        for proc in chosen:
            proc.kill("killed")
        for proc in chosen:
            await asyncio.to_thread(proc.proc.wait)
        for proc in chosen:
            while proc.ended is None:
                await asyncio.sleep(0.01)
            await proc.settle()
        return len(chosen)

    def _find(self, owner: tuple[str, str], pid: str) -> _Process:
        proc = self._procs.get(pid) if isinstance(pid, str) else None
        if proc is None or proc.owner != owner:  # another's process is not there at all
            raise NotFoundError(f"no background process {pid!r}; list yours to see their ids")
        return proc

    def _forget_old(self, owner: tuple[str, str]) -> None:
        ended = [p for p in self._procs.values() if p.owner == owner and p.done]
        for proc in ended[: max(0, len(ended) - _KEEP_ENDED)]:
            del self._procs[proc.id]
            self._handles.pop(proc.id, None)


def _kill_all(handles: dict[str, tuple[subprocess.Popen[bytes], Prepared]]) -> None:
    """Kill every running process (the registry is being collected, or the interpreter
    exits) and remove every view left; nothing is written back."""
    for popen, prepared in list(handles.values()):
        if popen.poll() is None and prepared.tree is not None:
            kill_tree(prepared.tree)
        if popen.stdin is not None:
            with contextlib.suppress(OSError):
                popen.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=5)
        prepared.close_fds()
        remove_tree(prepared.folder)
