"""Run a coroutine to completion from blocking code, without a thread hop when none is needed.

This is the engine under :class:`~bastion.SyncWorkspace` and the blocking adapters
(``run_blocking``). One event loop per process serves every blocking call from every thread,
so whatever binds itself to a loop (an ``asyncio.Lock`` a tool session shares between calls,
a task a call leaves running) always sees the same loop. Nobody owns that loop:

* **The calling thread drives it** when no loop runs in that thread and no other thread is
  driving it (a script, a LangChain tool run by ``invoke``). The call's task is created
  *eagerly*: its first step runs at once, in the caller's thread, inside the task's
  constructor (what Python 3.12 calls an eager task, done by hand so that the loop need not
  be running).
  A call that never suspends (a local-disk read: the store works on the loop) is finished
  there, with no loop iteration and no other thread. A call that does suspend (it waits for
  a worker thread, a socket, a timer) goes on with ``run_until_complete`` in the same thread.
  Either way it is one real task on the one loop: ``asyncio.timeout``, ``current_task`` and
  loop-bound locks work as they do under ``asyncio.run``.
* **Another thread is driving it**: the call is submitted to the loop
  (``run_coroutine_threadsafe``) and the caller waits for it, as every call did before.
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
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import threading
from asyncio import _get_running_loop, _set_running_loop
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


class _Loop(asyncio.SelectorEventLoop):
    """The shared loop, with two additions for the thread that drives it.

    ``eager``: the next ``call_soon`` runs its callback at once instead of queueing it.
    ``Task.__init__`` schedules the task's first step with ``call_soon`` (the C and the Python
    tasks of 3.11 to 3.13 alike), so a task created while ``eager`` is set takes its first
    step inside its constructor, as the current task of this loop.

    ``touched``: set when anything is queued or timed (``call_soon``, ``call_at``, and
    ``call_soon_threadsafe`` from any thread: a finished call's hand-over, an async
    generator's clean-up) since the loop last ran, so that the driver knows whether a call that
    finished in its first step leaves work behind.
    """

    _thread_id: int | None  # BaseEventLoop's: the thread running the loop, or None

    def __init__(self) -> None:
        super().__init__()
        self.eager = False
        self.touched = False
        self._ran = asyncio.Handle(_nothing, (), self)  # what an eager call_soon returns
        self._ran.cancel()
        # The async generator hooks run_forever installs (BaseEventLoop's), bound once.
        self._firstiter: Callable[[Any], None] = self._asyncgen_firstiter_hook  # type: ignore[attr-defined]
        self._finalizer: Callable[[Any], None] = self._asyncgen_finalizer_hook  # type: ignore[attr-defined]

    def call_soon(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        if self.eager:
            self.eager = False
            if context is None:
                callback(*args)
            else:
                context.run(callback, *args)
            return self._ran  # the task keeps no reference to it
        self.touched = True
        return super().call_soon(callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        self.touched = True
        return super().call_at(when, callback, *args, context=context)

    def call_soon_threadsafe(  # type: ignore[override]
        self,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        self.touched = True
        return super().call_soon_threadsafe(callback, *args, context=context)

    def start(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A task for ``coro`` whose first step has run, in this thread, with this loop as
        the running loop (the caller holds the loop: nobody else runs it now)."""
        hooks = sys.get_asyncgen_hooks()
        # What run_forever sets up, so the first step sees a running loop, in this thread.
        sys.set_asyncgen_hooks(self._firstiter, self._finalizer)
        _set_running_loop(self)
        self._thread_id = threading.get_ident()
        self.eager = True
        try:
            return asyncio.Task(coro, loop=self)
        finally:
            self.eager = False
            self._thread_id = None
            _set_running_loop(None)
            sys.set_asyncgen_hooks(*hooks)

    def tick(self) -> None:
        """Run what is queued now (callbacks a first step scheduled, cancelled timers to
        drop), once."""
        self.call_soon(self.stop)
        self.touched = False
        self.run_forever()

    def drive(self, future: asyncio.Future[Any] | Coroutine[Any, Any, Any]) -> None:
        """Run the loop in this thread until ``future`` is done."""
        self.touched = False
        self.run_until_complete(future)

    def has_tasks(self) -> bool:
        """Whether a task of this loop is not done yet."""
        return bool(asyncio.all_tasks(self))


def _nothing() -> None:
    return None


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
        self._loop: _Loop | None = None
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
        running = _get_running_loop()
        lock = self._lock
        with lock:
            loop = self._loop
            if loop is None:
                loop = self._loop = _Loop()
            drive = running is None and not self._driven
            if drive:
                self._driven = True
        if not drive:
            return self._submit(loop, coro, running).result()
        try:
            task = loop.start(coro)
        except BaseException:
            self._release(loop, settled=False)
            raise
        if task.done() and not loop.touched:  # finished in its first step, left nothing
            with lock:
                if self._inflight:  # another thread's call came in meanwhile
                    self._wake_standby()
                else:
                    self._driven = False
            return task.result()
        return self._finish(loop, task)

    def _submit(
        self,
        loop: _Loop,
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

    def _finish(self, loop: _Loop, task: asyncio.Task[T]) -> T:
        """Run the loop in this thread until ``task`` is done; then let the loop go."""
        try:
            if task.done():
                loop.tick()  # what its first step queued
            else:
                loop.drive(task)
        finally:
            if not task.done():  # interrupted (KeyboardInterrupt): the standby cancels it
                task.cancel()
            self._release(loop, settled=False)
        return task.result()

    def _release(self, loop: _Loop, *, settled: bool) -> None:
        """Let the loop go, or hand it to the standby thread when it has work left."""
        with self._lock:
            if self._inflight or (not settled and loop.has_tasks()):
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
                loop.drive(_quiet())
                with self._lock:
                    if not self._inflight and not loop.has_tasks():
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


_FORKED: list[_Loop] = []
_RUNNER = _Runner()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RUNNER.forked)


run_blocking = _RUNNER.run
"""Run a coroutine to completion from blocking code (see ``_Runner.run`` and the module doc)."""
