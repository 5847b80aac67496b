"""Blocking work off the event loop: worker threads that a caller may stop waiting for.

A store whose system calls may wait (a lock another process holds, an fsync, a slow or network
disk, a tree walk) runs them on a :class:`Workers` pool, never on the event loop, so the loop
goes on serving everybody else and a mount's timeout (``core.timeouts``) can fire.

A thread cannot be interrupted, so the work cooperates. Each call carries a :class:`Ticket`;
when the awaiting coroutine is cancelled (its mount's timeout fired, its client went away)
the ticket is *abandoned*, and the work gives up at its next check:

* :func:`wait_until` (how the work waits for a lock: tried without blocking, then again after
  a pause that doubles from 0.5 ms to 20 ms) raises :class:`Abandoned` instead of waiting on;
* :func:`commit` marks the point after which the change is made (a rename over the target):
  past it the work finishes, before it an abandoned call changes nothing.

So a write that timed out while it waited for a lock was not made, and its thread is free
again within 20 ms. Work outside a pool (no ticket) waits as long as it takes.

A caller that must do something before a store's change is made, but need not wait for it
before the store starts its work, sets :data:`COMMIT_GATE` around the store call: the work
opens the :class:`Gate` at its commit point, in its worker thread, before the change (the
change journal records the change there, while the store's temporary file is written and
flushed, instead of before the store is called). What the gate raises, the call raises, and
nothing is changed; a call abandoned while the gate was open has the gate's work taken back.

A pool belongs to one store: a disk that hangs holds its own threads only, never another
mount's. Its threads start when first needed; a child process made by ``fork`` starts with
fresh pools (the parent's threads are not in it).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Any, Protocol, TypeVar

from bastion.core.errors import StoreUnavailableError

__all__ = [
    "CALL_LIMIT",
    "COMMIT_GATE",
    "Abandoned",
    "CallLimit",
    "Gate",
    "Ticket",
    "Workers",
    "commit",
    "held",
    "wait_until",
]

T = TypeVar("T")

DISK_THREADS = 8
"""Threads of one store's pool: a local disk serves a few requests at once well; more only
queue in the kernel (see docs/decisions/, off-loop store calls)."""

_FIRST_PAUSE = 0.0005
_LONGEST_PAUSE = 0.02


class CallLimit:
    """How long a mount waits for one call of its store, and the error it raises then."""

    __slots__ = ("seconds", "unavailable")

    def __init__(self, seconds: float, unavailable: Callable[[], BaseException]) -> None:
        self.seconds = seconds
        self.unavailable = unavailable


CALL_LIMIT: contextvars.ContextVar[CallLimit | None] = contextvars.ContextVar(
    "bastion_call_limit", default=None
)
"""Set by a mount (``core.timeouts``) around a call of a store that bounds its own waits: the
store applies it to its hops to a worker thread only, so that a call answered at once (a
read from the page cache) pays for no timer."""


class Gate(Protocol):
    """What a caller does at a store call's commit point (:data:`COMMIT_GATE`)."""

    def open(self, ticket: Ticket) -> None:
        """Called once, in the worker thread, before the change is made; raising gives the
        change up. ``ticket`` says whether the caller is still waiting."""

    def undo(self) -> None:
        """The call was abandoned after :meth:`open` and before its change: take it back."""


COMMIT_GATE: contextvars.ContextVar[Gate | None] = contextvars.ContextVar(
    "bastion_commit_gate", default=None
)
"""Set by a caller around a store call: the :class:`Gate` the call's work opens at its commit
point. Only a store that says ``gated_commits`` (every change it makes passes :func:`commit`
in a pool) honours it; a caller must not rely on it otherwise."""


class Abandoned(StoreUnavailableError):
    """Raised in a worker thread whose caller stopped waiting (nobody sees it but the pool)."""


class Ticket:
    """One call's state, shared by the awaiting coroutine and the thread doing the work."""

    __slots__ = ("_gate", "_lock", "_state")
    _RUNNING, _ABANDONED, _COMMITTED = 0, 1, 2

    def __init__(self, gate: Gate | None = None) -> None:
        self._lock = threading.Lock()
        self._state = self._RUNNING
        self._gate = gate

    @property
    def abandoned(self) -> bool:
        return self._state == self._ABANDONED

    def abandon(self) -> bool:
        """Tell the work to give up; ``False`` when it is already past its commit point."""
        with self._lock:
            if self._state == self._RUNNING:
                self._state = self._ABANDONED
            return self._state == self._ABANDONED

    def commit(self) -> None:
        """Open the gate (once), then pass the commit point; raise :class:`Abandoned` when
        the caller is gone (the gate's work taken back when it was opened)."""
        gate, self._gate = self._gate, None
        if gate is not None:
            if self.abandoned:
                raise Abandoned("the caller stopped waiting; nothing was changed")
            gate.open(self)
        with self._lock:
            passed = self._state != self._ABANDONED
            if passed:
                self._state = self._COMMITTED
        if not passed:
            if gate is not None:
                gate.undo()
            raise Abandoned("the caller stopped waiting; nothing was changed")


_current = threading.local()


def _ticket() -> Ticket | None:
    ticket: Ticket | None = getattr(_current, "ticket", None)
    return ticket


def checkpoint() -> None:
    """Raise :class:`Abandoned` when this thread's caller stopped waiting."""
    ticket = _ticket()
    if ticket is not None and ticket.abandoned:
        raise Abandoned("the caller stopped waiting")


def commit() -> None:
    """The work's commit point: past it the change is made even if the caller goes away."""
    ticket = _ticket()
    if ticket is not None:
        ticket.commit()


def wait_until(attempt: Callable[[], bool]) -> None:
    """Call ``attempt`` (which must not block) until it returns ``True``, pausing between
    tries, and give up with :class:`Abandoned` once the caller stopped waiting."""
    pause = _FIRST_PAUSE
    while not attempt():
        checkpoint()
        time.sleep(pause)
        pause = min(2 * pause, _LONGEST_PAUSE)


@contextmanager
def held(lock: threading.Lock) -> Iterator[None]:
    """``with lock:``, waiting for it as :func:`wait_until` waits."""
    if not lock.acquire(blocking=False):
        wait_until(lambda: lock.acquire(timeout=_LONGEST_PAUSE))
    try:
        yield
    finally:
        lock.release()


def _call(ticket: Ticket, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    if ticket.abandoned:  # the caller went away while this waited in the queue
        raise Abandoned("the caller stopped waiting")
    _current.ticket = ticket
    try:
        return fn(*args)
    finally:
        _current.ticket = None


def _answer(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[T],
    ticket: Ticket,
    fn: Callable[..., T],
    args: tuple[Any, ...],
) -> None:
    """Run the call in this worker thread, then hand its outcome to ``future`` on ``loop``."""
    try:
        result, error = _call(ticket, fn, args), None
    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine, raised there
        result, error = None, exc
    with suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if future.done():  # the caller was cancelled (its ticket abandoned)
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class Workers:
    """A pool of ``threads`` worker threads for one store's blocking calls."""

    def __init__(self, name: str, threads: int = DISK_THREADS) -> None:
        if threads < 1:
            raise ValueError("a pool needs at least one thread")
        self.name = name
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        _ALL.add(self)

    def _executor(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                pool = self._pool
                if pool is None:
                    pool = self._pool = ThreadPoolExecutor(self.threads, self.name)
        return pool

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread. Cancelled while it runs, the call abandons its
        ticket (see the module doc) and raises ``CancelledError`` at once."""
        ticket = Ticket(COMMIT_GATE.get())
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        # the work answers the loop's future itself: no concurrent future chained to it
        # (``run_in_executor``), which costs a callback and a state copy per hop
        self._executor().submit(_answer, loop, future, ticket, fn, args)
        limit = CALL_LIMIT.get()
        try:
            if limit is None:
                return await future
            try:
                async with asyncio.timeout(limit.seconds):
                    return await future
            except TimeoutError:
                ticket.abandon()
                raise limit.unavailable() from None
        except asyncio.CancelledError:
            ticket.abandon()
            raise

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """``fn(*args)`` in a worker thread, from any thread; no ticket (it runs to its end)."""
        return self._executor().submit(fn, *args)

    def close(self) -> None:
        """Let the threads go once their work is done; a later call starts new ones."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._pool = None  # the parent's threads are not in this process


_ALL: weakref.WeakSet[Workers] = weakref.WeakSet()


def _after_fork() -> None:
    for workers in list(_ALL):
        workers._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
