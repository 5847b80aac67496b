"""ASGI middleware of the server: one log line per request, security headers on every
response, a request's shape checked before any handler sees it, and request bodies held to
their limit.

Every refusal here is one JSON line with a 4xx status, and none repeats what was sent: a
malformed request is never a ``500`` (docs/server.md, "Malformed requests"). Host and Origin
are checked before these (:mod:`bastion.server.origin`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bastion.server.errors import ApiError, BodyTooLargeError, error_response

__all__ = ["UPLOAD_PATH", "AccessLog", "BodyLimit", "RequestShape", "SecurityHeaders"]

UPLOAD_PATH = "/v1/ingest"
"""The one endpoint whose body is a multipart upload (``max_upload_bytes``, streamed)."""

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"content-security-policy", _CSP.encode()),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


access = logging.getLogger("bastion.access")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_LOGGED_PATH = 256


def _printable(text: str) -> str:
    """``text`` with control characters written as escapes: one request, one log line."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class AccessLog:
    """One line per request on the ``bastion.access`` logger (level info), written when the
    request ends: method, URL path (never the query string, which may name a file or hold a
    question; cut at 256 characters), status, duration in milliseconds and the subject of the
    principal it acted for (``-`` when none was identified); the probes and ``/metrics`` are
    left out (``api(logged=False)``). Never a token, a header or a body. The request id is
    on the record too (:class:`~bastion.server.metrics.Measure` sets it; this middleware
    runs just inside it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        known = scope.setdefault("state", {})  # ``request.state``: who it acted for
        status: int | None = None
        started = time.perf_counter()

        async def seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, seen)
        except asyncio.CancelledError:
            if status is None:
                status = 503  # cut when the server stopped (bastion.server.lifecycle)
            raise
        finally:
            if not (isinstance(known, dict) and known.get("unlogged")):
                _log_request(scope, known, status or 500, time.perf_counter() - started)


def _log_request(scope: Scope, known: object, status: int, seconds: float) -> None:
    elapsed = round(seconds * 1000, 1)
    method = _printable(str(scope.get("method", "")))[:16]
    path = _printable(str(scope.get("path", "")))[:_LOGGED_PATH]
    who = known.get("principal") if isinstance(known, dict) else None
    subject = _printable(who)[:_LOGGED_PATH] if isinstance(who, str) else "-"
    access.info(
        "%s %s %d %s %.1fms",
        method,
        path,
        status,
        subject,
        elapsed,
        extra={
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": elapsed,
            "subject": subject,
        },
    )


class SecurityHeaders:
    """Adds the security headers; API answers are never cached."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith(("/v1/", "/mcp"))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in _HEADERS if k not in present]
                if api and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


_MAX_PATH = 2048
_MAX_QUERY = 8192
_MAX_PARAMS = 64
_MAX_HEADERS = 100
_MAX_HEADER_BYTES = 16 * 1024
_SINGLE = (b"authorization", b"content-type", b"content-length")
"""Headers a request may carry once: two ``Authorization`` headers would leave the choice of
principal to whichever part reads first."""

_IGNORED = (b"range", b"if-range")
_URL_TEXT = re.compile(rb"[\x21-\x7e]*")
_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_HEADER_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_CONTROL = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def _refuse(status: int, code: str, message: str) -> ApiError:
    return ApiError(status, code, message)


def _decoded(raw: bytes, *, plus: bytes = b" ") -> str | None:
    """``raw`` (URL text) percent-decoded as UTF-8 (``+`` read as ``plus``); ``None`` when it
    is not URL text, holds a broken escape or does not decode (a lone surrogate is not
    UTF-8)."""
    if not _URL_TEXT.fullmatch(raw) or _BAD_ESCAPE.search(raw):
        return None
    try:
        return unquote_to_bytes(raw.replace(b"+", plus)).decode("utf-8")
    except UnicodeDecodeError:
        return None


def path_problem(scope: Scope) -> ApiError | None:
    """The URL path: URL text, well-escaped UTF-8, no control character."""
    path: str = scope["path"]
    raw: bytes | None = scope.get("raw_path")
    decoded = path if raw is None else _decoded(raw, plus=b"+")
    if len(path) > _MAX_PATH or (raw is not None and len(raw) > _MAX_PATH):
        return _refuse(414, "uri_too_long", f"the URL path is over {_MAX_PATH} characters")
    if decoded is None or _CONTROL.search(decoded) or _CONTROL.search(path):
        return _refuse(
            400,
            "bad_request",
            "the URL path is not percent-encoded UTF-8 text, or holds a control character",
        )
    return None


def query_problem(query: bytes) -> ApiError | None:
    """The query string: short, well-escaped UTF-8, each parameter at most once (two values
    for one name would leave the choice to whichever part reads first)."""
    if len(query) > _MAX_QUERY:
        return _refuse(414, "uri_too_long", f"the query string is over {_MAX_QUERY} bytes")
    seen: set[str] = set()
    for piece in query.split(b"&"):
        if not piece:
            continue
        name, _, value = piece.partition(b"=")
        key = _decoded(name)
        if key is None or _decoded(value) is None:
            return _refuse(
                400,
                "bad_query",
                "the query string is not percent-encoded UTF-8 (write %25 for a literal %)",
            )
        if key in seen:
            return _refuse(400, "bad_query", "a query parameter is given twice; give it once")
        seen.add(key)
    if len(seen) > _MAX_PARAMS:
        return _refuse(400, "bad_query", f"more than {_MAX_PARAMS} query parameters")
    return None


def header_problem(headers: list[tuple[bytes, bytes]]) -> ApiError | None:
    """Few and small headers; no line break or NUL in a value; no second copy of a header
    that decides (who is asking, how the body is read)."""
    size = sum(len(k) + len(v) for k, v in headers)
    if len(headers) > _MAX_HEADERS or size > _MAX_HEADER_BYTES:
        return _refuse(
            431,
            "headers_too_large",
            f"the request headers are over {_MAX_HEADERS} or {_MAX_HEADER_BYTES} bytes",
        )
    names = [k.lower() for k, _ in headers]
    for single in _SINGLE:
        if names.count(single) > 1:
            return _refuse(400, "bad_header", f"the {single.decode()} header is given twice")
    if not all(_HEADER_VALUE.fullmatch(v) for _, v in headers):
        return _refuse(400, "bad_header", "a header value holds a control character")
    return None


class RequestShape:
    """Refuses a URL path, query string or header set that is malformed (``400``), too long
    (``414``) or too large (``431``), before any handler parses it.

    ``Range`` is dropped: the page and its static files are small and come back whole (a
    server may ignore ``Range``, RFC 9110), where Starlette's file responses answered a
    malformed one with a line of plain text. Byte ranges of workspace files are asked for
    with ``start``/``end``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = list(scope.get("headers", []))
            problem = (
                path_problem(scope)
                or query_problem(scope.get("query_string", b""))
                or header_problem(headers)
            )
            if problem is not None:
                await error_response(problem)(scope, receive, send)
                return
            kept = [(k, v) for k, v in headers if k.lower() not in _IGNORED]
            if len(kept) != len(headers):
                scope = {**scope, "headers": kept}
        await self.app(scope, receive, send)


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((v for k, v in scope.get("headers", []) if k.lower() == name), None)


def _wants_json(scope: Scope, body: bytes) -> bool:
    """A body for the API is JSON; so is every POST to ``/mcp`` (its transport answers any
    other with a line of plain text)."""
    if scope["path"] == "/mcp":
        return bool(scope["method"] == "POST")
    return bool(body) and scope["path"].startswith("/v1/")


def _is_json(content_type: bytes | None) -> bool:
    media, *params = (content_type or b"").decode("latin-1").lower().split(";")
    charset = [p.split("=", 1)[1].strip(' "') for p in params if p.strip().startswith("charset=")]
    return media.strip() == "application/json" and charset in ([], ["utf-8"])


class BodyLimit:
    """Holds request bodies to their limit. A ``Content-Length`` over it is refused at once.
    An upload streams (the handler's read raises :class:`BodyTooLargeError`, a ``413``);
    every other body is read here up to its limit (``413`` past it) and handed on whole, and
    a body sent to a JSON endpoint must say ``application/json`` (``415``: a form post from
    another site's page can send JSON-looking text without asking the browser first)."""

    def __init__(self, app: ASGIApp, *, default: int, uploads: int) -> None:
        self.app = app
        self.default = default
        self.uploads = uploads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = scope["path"] == UPLOAD_PATH
        limit = self.uploads if upload else self.default
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or len(declared) > 19):
            problem = _refuse(400, "bad_header", "Content-Length must be a number of bytes")
            await error_response(problem)(scope, receive, send)
            return
        if declared is not None and int(declared) > limit:
            await error_response(BodyTooLargeError(limit))(scope, receive, send)
            return
        if upload:
            await self.app(scope, _limited(receive, limit), send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body was read: nothing to answer
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                await error_response(BodyTooLargeError(limit))(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if _wants_json(scope, body) and not _is_json(_header(scope, b"content-type")):
            problem = _refuse(
                415,
                "unsupported_media_type",
                "send the body as JSON with Content-Type: application/json",
            )
            await error_response(problem)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


def _limited(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLargeError(limit)
        return message

    return limited


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read ahead, as one message; then the connection's own messages (a
    disconnect, which a streaming answer waits for)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
