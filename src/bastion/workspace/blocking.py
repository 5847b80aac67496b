"""Run a coroutine to completion from blocking code, on one shared loop, with public asyncio API.

This is the engine under :class:`~bastion.SyncWorkspace` and the blocking adapters
(``run_blocking``). One event loop per process serves every blocking call from every thread,
so whatever binds itself to a loop (an ``asyncio.Lock`` a tool session shares between calls,
a task a call leaves running, the sandbox's egress proxy) always sees the same loop. Nobody
owns that loop:

* **The calling thread drives it** when no loop runs in that thread and no other thread is
  driving it (a script, a LangChain tool run by ``invoke``): ``loop.run_until_complete`` in
  the caller's thread, no thread hop. It is one real task on the one loop: ``asyncio.timeout``,
  ``current_task`` and loop-bound locks work as they do under ``asyncio.run``.
* **Another thread is driving it**: the call is submitted to the loop
  (``run_coroutine_threadsafe``) and the caller waits for it.
* **A loop is already running in the calling thread** (a notebook, an async server calling a
  blocking library): the call is submitted, and a standby thread drives the loop when nobody
  else does. The caller's own loop is blocked for the time of the call, as any blocking call
  blocks it. A blocking call made from a coroutine that this loop itself is running (nested
  ``run_blocking``) cannot ever finish and raises :class:`RuntimeError` at once.

When a driving caller's call is done and the loop still has work (calls of other threads
that were submitted meanwhile, tasks a call started and left running), the standby thread
takes over and drives the loop until that work is finished; a blocking call made while it
drives is submitted to it. So background tasks keep running between calls, as they did when
the loop lived in its thread for good. Timers with no task behind them wait for the next
call.

Only public asyncio API is used (``new_event_loop``, ``run_until_complete``,
``run_coroutine_threadsafe``, ``all_tasks``): no subclass of the loop, no private name, so it
works alike on every Python from 3.11 on. The cost against the async call is two loop
iterations in the caller's thread (measured in ``bench/sync_facade.py`` and
``bench/off_loop.py``).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _has_tasks(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether a task of ``loop`` is not done yet."""
    return bool(asyncio.all_tasks(loop))


class _Runner:
    """Who drives the shared loop, and when (see the module doc).

    ``_driven`` is true while a thread drives the loop (a caller, or the standby thread);
    ``_inflight`` counts calls submitted to the loop and not finished. Both change under
    ``_lock``, so a caller that finds the loop free and a driver that lets it go agree.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # Reentrant: a done-callback added under the lock runs at once if the call is done.
        self._lock = threading.RLock()
        self._wakeup = threading.Condition(self._lock)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._driven = False
        self._inflight = 0
        self._standby: threading.Thread | None = None
        self._wake = False

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion and return its result (or raise its exception): how
        blocking code (``SyncWorkspace``, a framework's synchronous tool call) reaches the
        async API from any thread, with or without an event loop running there.

        With no loop running in the calling thread the coroutine runs in that thread, on
        Bastion's one shared loop (no thread hop); otherwise it is handed to that loop and the
        caller waits. Called from a coroutine that Bastion's loop itself runs, it raises
        :class:`RuntimeError` (await the async API there)."""
        running = _running_loop()
        with self._lock:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.new_event_loop()
            drive = running is None and not self._driven
            if drive:
                self._driven = True
        if not drive:
            return self._submit(loop, coro, running).result()
        return self._finish(loop, coro)

    def _submit(
        self,
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, T],
        running: asyncio.AbstractEventLoop | None,
    ) -> Future[T]:
        """Hand ``coro`` to the loop; wake the standby thread if nobody drives it."""
        if running is loop:
            coro.close()
            raise RuntimeError(
                "a blocking Bastion call (SyncWorkspace, run_blocking) was made from a "
                "coroutine that Bastion's own loop is running, where it can never finish; "
                "await the async API there (SyncWorkspace.aio)"
            )
        with self._lock:
            done = asyncio.run_coroutine_threadsafe(coro, loop)
            self._inflight += 1
            done.add_done_callback(self._settled)
            if not self._driven:  # a loop runs in this thread, or the driver just let go
                self._driven = True
                self._wake_standby()
        return done

    def _finish(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
        """Run the loop in this thread until ``coro`` is done; then let the loop go.

        ``run_until_complete`` takes two loop iterations for a call that never waits: the
        second runs what the call's last step queued (an abandoned async generator's
        clean-up), so that the loop is handed on when that left a task behind."""
        try:
            task = loop.create_task(coro)
        except BaseException:
            coro.close()
            self._release(loop)
            raise
        try:
            loop.run_until_complete(task)
        except BaseException:
            if not task.done():  # interrupted (KeyboardInterrupt): the standby cancels it
                task.cancel()
                self._release(loop)
                raise
        self._release(loop)
        return task.result()

    def _release(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let the loop go, or hand it to the standby thread when it has work left."""
        with self._lock:
            if self._inflight or _has_tasks(loop):
                self._wake_standby()
            else:
                self._driven = False

    def _settled(self, _: object) -> None:
        with self._lock:
            self._inflight -= 1

    def _wake_standby(self) -> None:
        """Let the standby thread drive the loop (lock held; ``_driven`` stays true)."""
        self._wake = True
        if self._standby is None:
            self._standby = threading.Thread(target=self._serve, name="bastion-loop", daemon=True)
            self._standby.start()
        self._wakeup.notify_all()

    def _serve(self) -> None:
        """The standby thread: drive the loop whenever woken, until it has no work left."""
        while True:
            with self._lock:
                while not self._wake:
                    self._wakeup.wait()
                self._wake = False
                loop = self._loop
            assert loop is not None
            while True:
                loop.run_until_complete(_quiet())
                with self._lock:
                    if not self._inflight and not _has_tasks(loop):
                        self._driven = False
                        break

    def forked(self) -> None:
        """In a child process: the parent's loop and threads are not here; start afresh.
        The parent's loop object is kept, never closed: its selector is the parent's too,
        and closing it here would unregister the parent's wake-up socket."""
        if self._loop is not None:
            _FORKED.append(self._loop)
        self._reset()


async def _quiet() -> None:
    """Return when the loop has no task left but this one (after letting calls that were
    just submitted start)."""
    me = asyncio.current_task()
    while True:
        await asyncio.sleep(0)
        others = asyncio.all_tasks() - {me}
        if not others:
            return
        await asyncio.wait(others, return_when=asyncio.FIRST_COMPLETED)


_FORKED: list[asyncio.AbstractEventLoop] = []
_RUNNER = _Runner()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RUNNER.forked)


run_blocking = _RUNNER.run
"""Run a coroutine to completion from blocking code (see ``_Runner.run`` and the module doc)."""
