"""Per-principal rate limiting: a sliding window shared by every view of a workspace."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from bastion.core.errors import RateLimitError
from bastion.core.policy import RateLimit
from bastion.core.principal import Principal

__all__ = ["RateLimiter"]


class RateLimiter:
    """Counts requests per (tenant, principal id) in a sliding window; thread-safe.

    One limiter belongs to a workspace and is shared by every principal view, blocking facade
    and tool set built from it, so switching API surfaces does not reset the count.
    """

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._hits: dict[tuple[str, str], deque[float]] = {}

    def check(self, principal: Principal) -> None:
        """Count one request, or raise :class:`RateLimitError` if the window is full."""
        now = self._clock()
        key = (principal.tenant, principal.id)
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            horizon = now - self.limit.window_seconds
            while hits and hits[0] <= horizon:
                hits.popleft()
            if len(hits) >= self.limit.requests:
                retry = hits[0] + self.limit.window_seconds - now
                raise RateLimitError(
                    f"rate limit exceeded: {self.limit.requests} requests per "
                    f"{self.limit.window_seconds:g}s; retry in {max(retry, 0.0):.1f}s"
                )
            hits.append(now)
