"""Revoked tokens as one server process knows them: read from the shared state at most every
half second (off the event loop), so a revocation made anywhere is honoured by every process
within a second.

When the shared state cannot be read, the last list read is kept; once it is older than
:data:`STALE_AFTER` seconds every token is refused (``503``) until it can be read again:
failing closed, since a revocation made meanwhile would otherwise go unseen.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from bastion.core.errors import BastionError
from bastion.governance.errors import AuthenticationError
from bastion.server.errors import ApiError
from bastion.server.shared import Revoked, SharedState

__all__ = ["REFRESH_SECONDS", "STALE_AFTER", "Revocations"]

log = logging.getLogger("bastion.server")

REFRESH_SECONDS = 0.5
STALE_AFTER = 30.0


class Revocations:
    """The revoked tokens of one process's shared state."""

    def __init__(
        self, shared: SharedState | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.shared = shared
        self._clock = clock
        self._known = Revoked()
        self._read_at: float | None = None
        self._tried_at = -float("inf")
        self._lock = anyio.Lock()
        self._failing = False

    async def refresh(self) -> None:
        """Read the list again if it is older than :data:`REFRESH_SECONDS`."""
        if self.shared is None or self._clock() - self._tried_at < REFRESH_SECONDS:
            return
        async with self._lock:
            if self._clock() - self._tried_at < REFRESH_SECONDS:
                return
            self._tried_at = self._clock()
            try:
                self._known = await anyio.to_thread.run_sync(self.shared.revoked)
            except BastionError as exc:
                if not self._failing:
                    log.warning("revocations: cannot read the shared state: %s", exc)
                self._failing = True
                return
            self._read_at = self._tried_at
            if self._failing:
                log.warning("revocations: the shared state can be read again")
            self._failing = False

    def check(self, claims: Mapping[str, Any]) -> None:
        """Refuse a revoked token (``401``), or any token while the list is too old."""
        if self.shared is None:
            return
        if self._read_at is None or self._clock() - self._read_at > STALE_AFTER:
            raise ApiError(
                503,
                "revocations_unavailable",
                "the list of revoked tokens cannot be read; retry shortly",
            )
        why = self._known.refuses(claims)
        if why:
            raise AuthenticationError(f"token revoked ({why}): sign in again")
