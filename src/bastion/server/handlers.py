"""The one wrapper every API endpoint goes through, and how an endpoint reads its input.

Each endpoint is made by :func:`endpoint` from a declared operation
(:mod:`bastion.workspace.operations`): its query (``GET``) or JSON body (``POST``) is
validated by the operation's parameter model, so the names, types, defaults and bounds are
the declared ones, per endpoint; a name the endpoint does not take is a 400 ``unknown_field``
(a misspelt ``if_version`` ignored would turn a conditional write into a blind one). The
same :class:`Endpoint` records give the routes and the OpenAPI document.

``@api`` turns a handler's exceptions into JSON errors (:mod:`bastion.server.errors`); each
request's log line is written by :class:`~bastion.server.middleware.AccessLog` (method, path,
status, principal, duration; no header, no body, no query string).
"""

from __future__ import annotations

import functools
import json
import logging
import types
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import ValidationError, create_model
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bastion.core.models import FileInfo
from bastion.server.errors import ApiError, error_response
from bastion.workspace.operations import Operation, Params, operation

__all__ = ["Endpoint", "api", "body_json", "endpoint", "info_dict", "ok", "parse_args"]

log = logging.getLogger("bastion.server")

Handler = Callable[[Request], Awaitable[Response]]
Source = Literal["query", "body", "form"]
P = TypeVar("P", bound=Params)

_MAX_NAME = 60


def api(handler: Handler, *, logged: bool = True) -> Handler:
    """Errors as JSON (never a stack trace); the request's log line
    (:class:`~bastion.server.middleware.AccessLog`) is left out when not ``logged`` (the
    probes and the metrics, asked for every few seconds)."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        if not logged:
            request.state.unlogged = True
        try:
            return await handler(request)
        except Exception as exc:  # noqa: BLE001 - every error becomes a JSON answer
            return error_response(exc)

    return wrapped


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One HTTP endpoint of a declared operation."""

    path: str
    method: Literal["GET", "POST"]
    operation: Operation
    model: type[Params]
    """What this endpoint validates: the operation's parameters (less ``exclude``)."""
    source: Source
    handler: Handler
    status: int = 200
    public: bool = False
    """Served without a token."""

    def route(self) -> Route:
        return Route(self.path, self.handler, methods=[self.method])


def endpoint(
    name: str,
    method: Literal["GET", "POST"],
    path: str,
    *,
    status: int = 200,
    public: bool = False,
    exclude: Iterable[str] = (),
    source: Source | None = None,
    logged: bool = True,
) -> Callable[[Callable[[Request, Any], Awaitable[Response]]], Endpoint]:
    """An endpoint serving the operation ``name``: ``fn(request, params)`` gets the validated
    parameters (``exclude``: declared ones this endpoint does not take, such as an object in
    a query string). ``source`` is where they come from: the query for ``GET``, the JSON body
    for ``POST``, or ``form`` (the handler reads a multipart form and calls
    :func:`parse_args` itself)."""
    op = operation(name)
    model = _narrowed(op, frozenset(exclude))
    where: Source = source or ("query" if method == "GET" else "body")

    def make(fn: Callable[[Request, Any], Awaitable[Response]]) -> Endpoint:
        async def handler(request: Request) -> Response:
            if where == "form":
                return await fn(request, None)
            if where == "query":
                raw: Mapping[str, Any] = {k: v for k, v in request.query_params.items() if v != ""}
            else:
                raw = await body_json(request)
            return await fn(request, parse_args(model, raw, where))

        functools.update_wrapper(handler, fn)
        return Endpoint(
            path=path,
            method=method,
            operation=op,
            model=model,
            source=where,
            handler=api(handler, logged=logged),
            status=status,
            public=public,
        )

    return make


def _narrowed(op: Operation, exclude: frozenset[str]) -> type[Params]:
    if not exclude:
        return op.params
    unknown = exclude - set(op.fields)
    if unknown:
        raise KeyError(f"{op.name} declares no {', '.join(sorted(unknown))}")
    kept: dict[str, Any] = {
        name: (info.annotation, info) for name, info in op.fields.items() if name not in exclude
    }
    return create_model(f"{op.params.__name__}Query", __base__=Params, **kept)


class _DuplicateKeyError(ValueError):
    """A JSON object names one key twice (parsers disagree on which value wins)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise _DuplicateKeyError
    return data


async def body_json(request: Request) -> Mapping[str, Any]:
    """The request's JSON object (a 400 for anything else, a key given twice included: one
    parser would take the first value and another the last)."""
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}", object_pairs_hook=_unique)
    except _DuplicateKeyError:
        raise ApiError(
            400, "bad_json", "the body names a field twice; give each field once"
        ) from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        # RecursionError: a body nested deeper than the parser's stack; a 400 like any other
        raise ApiError(400, "bad_json", "the body is not valid JSON; send a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object")
    return data


def parse_args(model: type[P], data: Mapping[str, Any], where: Source) -> P:
    """``data`` validated by ``model``; a 400 with a one-line reason otherwise:
    ``unknown_field`` (a name the model does not declare), ``missing_field``, ``bad_field``."""
    place = {"query": "the query", "body": "the body", "form": "the form"}[where]
    unknown = sorted(name for name in data if name not in model.model_fields)
    if unknown:
        raise ApiError(
            400,
            "unknown_field",
            f"unknown field {unknown[0][:_MAX_NAME]!r} in {place}; check its spelling (fields: "
            f"{', '.join(model.model_fields) or 'none'})",
        )
    for name, value in data.items():
        if isinstance(value, bool) and _is_int(model.model_fields[name].annotation):
            raise ApiError(400, "bad_field", f"{name!r} must be an integer")
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        raise _refusal(exc) from None
    except (ValueError, RecursionError):  # input no validator could read
        raise ApiError(400, "bad_field", f"{place} could not be read") from None


def _is_int(annotation: Any) -> bool:
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_int(a) for a in get_args(annotation))
    return annotation is int


def _refusal(exc: ValidationError) -> ApiError:
    error = exc.errors(include_url=False)[0]
    loc = error["loc"]
    name = repr(str(loc[0])[:_MAX_NAME]) if loc else "the input"
    kind = error["type"]
    if kind == "missing" or (kind == "string_too_short" and error.get("input") == ""):
        return ApiError(400, "missing_field", f"{name} is required (a non-empty value)")
    message = " ".join(str(error["msg"]).split())
    return ApiError(400, "bad_field", f"{name}: {message[:200]}")


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
