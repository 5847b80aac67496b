"""Waiting out other writers.

A read or a write that another writer (in this process or another) keeps spoiling — the file
changed between its labels and its bytes, between two chunks of a page, between a backup and
the write, between an object's head and a conditional append — is tried again. Tried back to
back, a handful of tries can all fall inside one burst of another process's writes; so each
try after the first waits a little, twice as long as the one before, and the whole is bounded
in time, not in tries. Then the caller gives up with a :class:`~bastion.ConflictError` that
says the file kept changing.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["Patience"]

PATIENCE = 2.0
"""Seconds an operation goes on trying while other writers keep changing its file."""


class Patience:
    """The pauses between tries of one operation: from 1 ms, doubling up to ``longest``,
    until ``seconds`` have passed since the first try failed."""

    __slots__ = ("_deadline", "_longest", "_pause", "_seconds")

    def __init__(self, seconds: float = PATIENCE, *, longest: float = 0.05) -> None:
        self._seconds = seconds
        self._longest = longest
        self._deadline = 0.0
        self._pause = 0.0

    async def wait(self) -> bool:
        """Pause before the next try; ``False``, at once, when the time is spent."""
        now = time.monotonic()
        if not self._deadline:
            self._deadline = now + self._seconds
        elif now >= self._deadline:
            return False
        self._pause = min(max(2 * self._pause, 0.001), self._longest)
        await asyncio.sleep(self._pause)
        return True
