"""The one wrapper every API endpoint goes through, and the small parsers of its inputs.

``@api`` turns a handler's exceptions into JSON errors (:mod:`bastion.server.errors`) and
logs one line per request: method, route, status, principal id. Nothing else about a
request is logged: no header, no body, no query string.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bastion.core.models import FileInfo
from bastion.server.errors import ApiError, error_response

__all__ = ["api", "body_json", "flag", "info_dict", "integer", "ok", "required", "text"]

log = logging.getLogger("bastion.server")

Handler = Callable[[Request], Awaitable[Response]]


def api(handler: Handler) -> Handler:
    """Errors as JSON (never a stack trace), and one log line per request."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await handler(request)
        except Exception as exc:  # noqa: BLE001 - every error becomes a JSON answer
            response = error_response(exc)
        ms = (time.perf_counter() - started) * 1000
        who = getattr(request.state, "principal", "-")
        route = request.scope.get("route")
        where = getattr(route, "path", "?")
        log.info("%s %s %d %s %.1fms", request.method, where, response.status_code, who, ms)
        return response

    return wrapped


FIELDS = frozenset(
    {
        *("path", "content", "mode", "if_version", "backup"),  # write
        *("old", "new", "replace_all"),  # edit
        *("src", "dst", "overwrite", "recursive", "parents", "exist_ok"),  # tree
        *("query", "question", "k", "filter", "rebuild", "user"),  # knowledge, admin
    }
)
"""Every field some endpoint's body reads. A body may carry another endpoint's fields (one
shape serves several endpoints), but a name no endpoint reads is refused: a misspelt
``if_version`` ignored would turn a conditional write into a blind one (docs/decisions.md)."""


async def body_json(request: Request) -> Mapping[str, Any]:
    """The request's JSON object (a 400 for anything else, or for a field no endpoint reads:
    :data:`FIELDS`)."""
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        # RecursionError: a body nested deeper than the parser's stack; a 400 like any other
        raise ApiError(400, "bad_json", "the body is not valid JSON; send a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object")
    unknown = sorted(name for name in data if name not in FIELDS)
    if unknown:
        raise ApiError(
            400,
            "unknown_field",
            f"unknown field {unknown[0][:60]!r} in the body; check its spelling (fields: "
            f"{', '.join(sorted(FIELDS))})",
        )
    return data


def _get(source: Mapping[str, Any], name: str) -> Any:
    return source.get(name)


def required(source: Mapping[str, Any], name: str) -> str:
    value = _get(source, name)
    if not isinstance(value, str) or value == "":
        raise ApiError(400, "missing_field", f"{name!r} is required (a non-empty string)")
    return value


def text(source: Mapping[str, Any], name: str, default: str | None = None) -> str | None:
    value = _get(source, name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ApiError(400, "bad_field", f"{name!r} must be a string")
    return value


def integer(
    source: Mapping[str, Any],
    name: str,
    default: int | None = None,
    *,
    low: int = 0,
    high: int = 1 << 62,
) -> int | None:
    value = _get(source, name)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ApiError(400, "bad_field", f"{name!r} must be an integer") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(400, "bad_field", f"{name!r} must be an integer")
    if not low <= value <= high:
        raise ApiError(400, "bad_field", f"{name!r} must be from {low} to {high}")
    return value


def flag(source: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = _get(source, name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.lower() in ("true", "1", "yes")
    raise ApiError(400, "bad_field", f"{name!r} must be true or false")


def info_dict(info: FileInfo) -> dict[str, Any]:
    """An entry as JSON: workspace path, kind, size, time, version (never a store path)."""
    return {
        "path": str(info.path),
        "kind": info.kind.value,
        "size": info.size,
        "mtime": info.mtime,
        "version": info.version,
    }


def ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)
