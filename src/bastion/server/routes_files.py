"""``/v1/files``: the workspace's file operations, each for the request's principal."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bastion.server.errors import ApiError
from bastion.server.handlers import api, body_json, flag, info_dict, integer, ok, required, text
from bastion.server.state import state_of

__all__ = ["routes"]

_MAX_LIST = 10_000


@api
async def list_files(request: Request) -> Response:
    ws = state_of(request).view(request)
    q = request.query_params
    entries = await ws.list(
        q.get("path", "/"),
        recursive=flag(q, "recursive"),
        depth=integer(q, "depth", low=1, high=64),
    )
    shown = [info_dict(e) for e in entries[:_MAX_LIST]]
    return ok({"entries": shown, "truncated": len(entries) > _MAX_LIST})


@api
async def stat(request: Request) -> Response:
    ws = state_of(request).view(request)
    return ok(info_dict(await ws.stat(required(request.query_params, "path"))))


@api
async def read(request: Request) -> Response:
    """Lines (``offset``/``limit``) as JSON text, or bytes (``start``/``end``) as they are."""
    ws = state_of(request).view(request)
    q = request.query_params
    path = required(q, "path")
    start, end = integer(q, "start"), integer(q, "end")
    if start is not None or end is not None or q.get("format") == "bytes":
        data = await ws.read_bytes(path, start=start, end=end)
        return Response(data, media_type="application/octet-stream")
    offset = integer(q, "offset", 0)
    limit = integer(q, "limit", low=0)
    assert offset is not None
    content = await ws.read_text(path, offset=offset, limit=limit)
    return ok({"path": path, "offset": offset, "content": content})


@api
async def write(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    content = body.get("content")
    if not isinstance(content, str):
        raise ApiError(400, "missing_field", "'content' is required (a string)")
    info = await ws.write(
        required(body, "path"),
        content,
        mode=text(body, "mode", "overwrite") or "overwrite",
        if_version=text(body, "if_version"),
        backup=flag(body, "backup"),
    )
    return ok(info_dict(info), 201)


@api
async def edit(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    new = body.get("new")
    if not isinstance(new, str):
        raise ApiError(400, "missing_field", "'new' is required (a string)")
    result = await ws.edit(
        required(body, "path"),
        required(body, "old"),
        new,
        replace_all=flag(body, "replace_all"),
        if_version=text(body, "if_version"),
    )
    return ok({"path": result.path, "replacements": result.replacements, "version": result.version})


@api
async def move(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    info = await ws.move(
        required(body, "src"), required(body, "dst"), overwrite=flag(body, "overwrite")
    )
    return ok(info_dict(info))


@api
async def copy(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    info = await ws.copy(
        required(body, "src"), required(body, "dst"), overwrite=flag(body, "overwrite")
    )
    return ok(info_dict(info), 201)


@api
async def delete(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    path = required(body, "path")
    await ws.delete(path, recursive=flag(body, "recursive"))
    return ok({"path": path, "deleted": True})


@api
async def mkdir(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request)
    path = required(body, "path")
    await ws.mkdir(path, parents=flag(body, "parents", True), exist_ok=flag(body, "exist_ok", True))
    return ok({"path": path, "created": True}, 201)


@api
async def glob(request: Request) -> Response:
    ws = state_of(request).view(request)
    q = request.query_params
    found = await ws.glob(
        required(q, "pattern"),
        path=q.get("path", "/"),
        limit=integer(q, "limit", 1000, low=1, high=_MAX_LIST),
    )
    return ok({"entries": [info_dict(e) for e in found]})


@api
async def grep(request: Request) -> Response:
    ws = state_of(request).view(request)
    q = request.query_params
    result = await ws.grep(
        required(q, "pattern"),
        q.get("path", "/"),
        regex=flag(q, "regex"),
        ignore_case=flag(q, "ignore_case"),
        context=integer(q, "context", 0, high=20) or 0,
        glob=q.get("glob") or None,
        max_total=integer(q, "max_total", 1000, low=1, high=_MAX_LIST) or 1000,
    )
    return ok(result.to_dict())


routes = [
    Route("/v1/files", list_files, methods=["GET"]),
    Route("/v1/files/stat", stat, methods=["GET"]),
    Route("/v1/files/read", read, methods=["GET"]),
    Route("/v1/files/write", write, methods=["POST"]),
    Route("/v1/files/edit", edit, methods=["POST"]),
    Route("/v1/files/move", move, methods=["POST"]),
    Route("/v1/files/copy", copy, methods=["POST"]),
    Route("/v1/files/delete", delete, methods=["POST"]),
    Route("/v1/files/mkdir", mkdir, methods=["POST"]),
    Route("/v1/files/glob", glob, methods=["GET"]),
    Route("/v1/files/grep", grep, methods=["GET"]),
]
