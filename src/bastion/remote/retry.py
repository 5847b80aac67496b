"""Retry rules shared by Bastion's HTTP clients (the embedder and the chat model).

Bounded retries with exponential backoff and jitter, ``Retry-After`` honoured (delta-seconds or
an HTTP date), and the transport errors worth another attempt. Never an endless retry: the
callers stop after their ``max_retries`` and when a server asks to wait longer than
``max_wait``.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from bastion.core.errors import RemoteRequestError, RemoteUnavailableError

__all__ = [
    "RETRYABLE_TRANSPORT",
    "Service",
    "backoff_delay",
    "retry_after",
    "send_with_retries",
]

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


@dataclass(frozen=True, slots=True)
class Service:
    """Who a client talks to, for its one-line errors: ``noun`` names the service
    (``"embedding"``), ``owner`` the thing whose ``base_url`` to check (``"the embedder's"``),
    ``where`` the URL without credentials."""

    noun: str
    owner: str
    where: str


async def send_with_retries(
    client: httpx.AsyncClient,
    request: Callable[[], httpx.Request],
    service: Service,
    refusal: Callable[[httpx.Response], str],
    *,
    stream: bool,
    timeout: float,
    max_retries: int,
    backoff: float,
    max_wait: float,
) -> httpx.Response:
    """Send ``request()`` until a 200 comes back (its headers read, and its body unless
    ``stream``), at most ``max_retries + 1`` times; retry only 429, 5xx, timeouts and
    transport failures, waiting as :func:`backoff_delay` says."""
    status: int | None = None
    last = "no attempt"
    attempts = max_retries + 1
    for attempt in range(attempts):
        wait: float | None = None
        try:
            async with asyncio.timeout(timeout):
                response = await client.send(request(), stream=stream)
        except TimeoutError:
            last = f"no reply within {timeout:g} s"
        except RETRYABLE_TRANSPORT as exc:
            last = type(exc).__name__
        except httpx.HTTPError as exc:
            raise RemoteRequestError(
                f"{service.noun} request to {service.where} failed ({type(exc).__name__}); "
                f"check {service.owner} base_url"
            ) from None
        else:
            status = response.status_code
            if status == 200:
                return response
            if stream:
                await response.aread()
                await response.aclose()
            if status != 429 and status < 500:
                raise RemoteRequestError(refusal(response), status=status)
            last = f"HTTP {status}"
            wait = retry_after(response.headers.get("retry-after"))
            if wait is not None and wait > max_wait:
                raise RemoteUnavailableError(
                    f"{service.noun} service {service.where} is unavailable ({last}) and asks "
                    f"to retry after {wait:.0f} s; try again later",
                    status=status,
                )
        if attempt + 1 < attempts:
            await asyncio.sleep(backoff_delay(attempt, wait, backoff=backoff, max_wait=max_wait))
    raise RemoteUnavailableError(
        f"{service.noun} service {service.where} did not answer after {attempts} attempts "
        f"(last: {last}); try again later or check the service",
        status=status,
    )
