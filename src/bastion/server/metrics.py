"""What an operator watches: Prometheus metrics at ``/metrics`` and a request id on every
request and log line.

:class:`Measure` (ASGI middleware, outermost) gives each request an id (the client's
``X-Request-Id`` when it is a short plain token, else a new one), answers it in the
``X-Request-Id`` header, keeps it in :data:`request_id` for the log lines written meanwhile
(:class:`RequestIdFilter`, :class:`JsonFormatter`), and counts the request by method, route
template (never the path a client sent) and status, with its latency.

The metrics hold no principal, no path and no query: only route templates, methods, status
codes and times, so ``/metrics`` is served without a token (a Prometheus scraper has none);
the Host/Origin check still applies.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from collections import defaultdict
from contextvars import ContextVar
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "JsonFormatter",
    "Measure",
    "Metrics",
    "RequestIdFilter",
    "request_id",
]

request_id: ContextVar[str] = ContextVar("bastion_request_id", default="-")
"""The id of the request being handled (``-`` outside any)."""

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_GIVEN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_OTHER = "other"


class Metrics:
    """Counters and latency histograms of one process, in Prometheus' text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self._buckets: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = defaultdict(float)
        self.in_flight = 0
        self.reloads = 0
        self.started = time.time()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, str(status))] += 1
            key = (method, route)
            counts = self._buckets.setdefault(key, [0] * (len(BUCKETS) + 1))
            for n, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[n] += 1
            counts[-1] += 1
            self._sums[key] += seconds

    def text(self) -> str:
        lines = [
            "# HELP bastion_http_requests_total Requests answered, by method, route and status.",
            "# TYPE bastion_http_requests_total counter",
        ]
        with self._lock:
            for (method, route, status), n in sorted(self.requests.items()):
                labels = _labels(method=method, route=route, status=status)
                lines.append(f"bastion_http_requests_total{{{labels}}} {n}")
            lines += [
                "# HELP bastion_http_request_seconds Time to answer, by method and route.",
                "# TYPE bastion_http_request_seconds histogram",
            ]
            for (method, route), counts in sorted(self._buckets.items()):
                base = _labels(method=method, route=route)
                for bound, n in zip((*map(str, BUCKETS), "+Inf"), counts, strict=True):
                    lines.append(f'bastion_http_request_seconds_bucket{{{base},le="{bound}"}} {n}')
                lines.append(
                    f"bastion_http_request_seconds_sum{{{base}}} {self._sums[(method, route)]:.6f}"
                )
                lines.append(f"bastion_http_request_seconds_count{{{base}}} {counts[-1]}")
            lines += [
                "# HELP bastion_http_requests_in_flight Requests being answered now.",
                "# TYPE bastion_http_requests_in_flight gauge",
                f"bastion_http_requests_in_flight {self.in_flight}",
                "# HELP bastion_config_reloads_total Workspace file reloads applied.",
                "# TYPE bastion_config_reloads_total counter",
                f"bastion_config_reloads_total {self.reloads}",
                "# HELP bastion_start_time_seconds When this process started.",
                "# TYPE bastion_start_time_seconds gauge",
                f"bastion_start_time_seconds {self.started:.3f}",
            ]
        return "\n".join(lines) + "\n"


def _labels(**values: str) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in values.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Measure:
    """ASGI middleware: the request id and the request's metrics (see the module)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Request(scope).headers.get("x-request-id", "")
        rid = given if _GIVEN_ID.fullmatch(given) else secrets.token_hex(8)
        token = request_id.set(rid)
        status = 500
        started = time.perf_counter()

        async def tagged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                message["headers"] = headers
            await send(message)

        self.metrics.in_flight += 1
        try:
            await self.app(scope, receive, tagged)
        finally:
            self.metrics.in_flight -= 1
            route = getattr(scope.get("route"), "path", None) or _OTHER
            method = scope["method"] if scope["method"] in _METHODS else _OTHER
            self.metrics.observe(method, route, status, time.perf_counter() - started)
            request_id.reset(token)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


def page(metrics: Metrics) -> Response:
    """The metrics in Prometheus' text format."""
    return PlainTextResponse(
        metrics.text(), headers={"content-type": "text/plain; version=0.0.4; charset=utf-8"}
    )


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to every record (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


REQUEST_FIELDS = ("method", "path", "status", "duration_ms", "subject")
"""What a request's own log line carries besides its message
(:class:`~bastion.server.middleware.AccessLog`)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (ISO 8601, UTC, milliseconds), level, logger, message,
    request id, the request's fields when the record has them (:data:`REQUEST_FIELDS`), and
    an exception's type, never its traceback text, which may quote data."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", request_id.get()),
        }
        for name in REQUEST_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["error"] = record.exc_info[0].__name__
        return json.dumps(entry, ensure_ascii=False)
