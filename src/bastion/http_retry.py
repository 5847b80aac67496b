"""Retry rules shared by Bastion's HTTP clients (the embedder and the chat model).

Bounded retries with exponential backoff and jitter, ``Retry-After`` honoured (delta-seconds or
an HTTP date), and the transport errors worth another attempt. Never an endless retry: the
callers stop after their ``max_retries`` and when a server asks to wait longer than
``max_wait``.
"""

from __future__ import annotations

import email.utils
import math
import random
import time

import httpx

__all__ = ["RETRYABLE_TRANSPORT", "backoff_delay", "retry_after"]

RETRYABLE_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
"""Transport failures that another attempt may not meet."""


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, asked: float | None, *, backoff: float, max_wait: float) -> float:
    """Seconds to wait before attempt ``attempt + 1``: what the server ``asked`` plus a little
    jitter, else exponential backoff (``backoff * 2**attempt``, capped) with full jitter."""
    if asked is not None:
        return asked + random.uniform(0.0, 0.1 * max(asked, backoff))  # noqa: S311 - jitter
    ceiling = min(max_wait, backoff * 2**attempt)
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not crypto
