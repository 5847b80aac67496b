"""A change recorded at its store's commit point instead of before the store is called.

A store that says ``gated_commits`` (the local store) opens the caller's
:data:`~bastion.core.offload.COMMIT_GATE` in its worker thread just before its change is made
(the rename of the new file over the old, the unlink, the move), after the slow part of its
work (the temporary file written and flushed). :class:`RecordGate` writes the journal's record
there, so the rule holds unchanged — the record is committed before the change is made, and a
record that cannot be written gives the change up — while the record costs no hop to a thread
of its own, and its commit runs beside the store's flush instead of before it:

* with a journal whose commit waits for a flush (``Journal.overlaps_commit``: PostgreSQL
  always, SQLite for a store that outlives the process) the record is started in the
  journal's own thread when the store call starts, and the gate waits for its commit: the two
  flushes overlap;
* with a journal whose commit is quick (no flush at each commit) the record would be written
  in the store's worker thread when the gate opens: no thread hop at all (the tests keep
  that path).

What a crash at each point leaves is the same as when the record came first (docs/changes.md):
before the gate opens, nothing of the change (a record being written is rolled back with its
transaction, or, committed, names a write that did not happen: its undo is refused as a
conflict); after, a record whose change may or may not have landed, never a change without its
record.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from bastion.core.offload import Abandoned, Ticket, Workers
from bastion.workspace.journal.db import Journal, JournalError, State

__all__ = ["JournalRetry", "RecordGate"]

Head = tuple[str, str | None, str | None, str, str, str | None]

_POLL = 0.02
"""Seconds between two looks, while waiting for a record, at whether the caller went away."""

_POOL = Workers("bastion-journal", 4)
"""Threads that write records started ahead (a journal that overlaps its commit)."""


class JournalRetry(JournalError):
    """A content the record relied on is gone from the journal: read it and record again."""


class RecordGate:
    """One record of a journal, written at the commit point of the store call it gates."""

    def __init__(
        self,
        journal: Journal,
        change: int | None,
        head: Head,
        rows: Sequence[tuple[str, State, State]],
        contents: Iterable[tuple[str, bytes]],
        held: tuple[str, ...],
        durable: bool,
    ) -> None:
        self._journal = journal
        self._args = (change, head, rows, list(contents), held, durable)
        self._count = len(rows)
        self._lock = threading.Lock()
        self._opening = threading.Lock()
        self._opened = False
        self._forgotten = False
        self.made: int | None = None
        """The record's change id, once the gate opened (the change may be made)."""
        self._ahead: Future[int | None] | None = None
        if journal.overlaps_commit:
            self._ahead = _POOL.submit(journal.record, *self._args)

    # -- in the store's worker thread --------------------------------------------------------

    def open(self, ticket: Ticket) -> None:
        """Commit the record (once: a store call that passes several commit points, or two
        pools, records its change once)."""
        with self._opening:
            if self._opened:
                return
            made = self._journal.record(*self._args) if self._ahead is None else self._wait(ticket)
            if made is None:
                raise JournalRetry("the journal no longer holds a content; recorded again")
            with self._lock:
                self.made, self._opened = made, True

    def _wait(self, ticket: Ticket) -> int | None:
        assert self._ahead is not None
        while True:
            try:
                return self._ahead.result(timeout=_POLL)
            except FutureTimeout:
                if ticket.abandoned:
                    self._drop()
                    raise Abandoned("the caller stopped waiting; nothing was changed") from None

    def undo(self) -> None:
        self._forget(self.made)

    def _forget(self, made: int | None) -> None:
        """Take the record back, once (the gate and the caller may both come here)."""
        with self._lock:
            if not made or self._forgotten:
                return
            self._forgotten = True
            self.made = None
        self._journal.forget(made, self._count)

    # -- in the caller -----------------------------------------------------------------------

    async def settle(self, *, wait: bool = True) -> None:
        """The store call failed: take back a record started ahead if the gate never opened
        (the store gave up before its change), before the caller hears of the failure
        (``wait``; a cancelled call does not wait: it is taken back once written). Once
        opened, the record stays: the change may have been made, and a record of a change
        that did not happen is the safe side (its undo is refused as a conflict)."""
        with self._lock:
            if self._opened:
                return
        ahead = self._ahead
        if ahead is None:
            return  # a record being written in the store's thread is taken back there (undo)
        if not wait:
            self._drop()
            return
        try:
            made = await asyncio.shield(asyncio.wrap_future(ahead))
        except asyncio.CancelledError:
            self._drop()
            raise
        except Exception:  # noqa: BLE001 - the record failed: nothing to take back
            return
        await asyncio.to_thread(self._forget, made)

    def _drop(self) -> None:
        ahead = self._ahead
        if ahead is None:
            return

        def forget(done: Future[int | None]) -> None:
            if not done.cancelled() and done.exception() is None:
                _POOL.submit(self._forget, done.result())

        ahead.add_done_callback(forget)
