"""``/v1/files``: the workspace's file operations, each for the request's principal.

Each endpoint serves one declared operation (:mod:`bastion.workspace.operations`): its
parameters are validated by the declaration (:func:`~bastion.server.handlers.endpoint`)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from bastion.core.models import EntryKind
from bastion.server.handlers import Endpoint, endpoint, info_dict, ok
from bastion.server.state import state_of
from bastion.workspace.documents import document_text, document_window
from bastion.workspace.operations import MAX_ENTRIES
from bastion.workspace.operations.files import (
    DeleteParams,
    EditParams,
    GlobParams,
    GrepParams,
    ListParams,
    MkdirParams,
    ReadParams,
    StatParams,
    TransferParams,
    WriteParams,
)

__all__ = ["ENDPOINTS", "routes"]


@endpoint("list", "GET", "/v1/files")
async def list_files(request: Request, args: ListParams) -> Response:
    ws = state_of(request).view(request)
    entries = await ws.list(args.path, recursive=args.recursive, depth=args.depth)
    shown = [info_dict(e) for e in entries[:MAX_ENTRIES]]
    return ok({"entries": shown, "truncated": len(entries) > MAX_ENTRIES})


@endpoint("stat", "GET", "/v1/files/stat")
async def stat(request: Request, args: StatParams) -> Response:
    """The entry, with a file's labels (the page shows them)."""
    ws = state_of(request).view(request)
    info = await ws.stat(args.path)
    labels = info.labels
    shown = None
    if labels is not None and info.kind is EntryKind.FILE:
        shown = {
            "tenant": labels.tenant,
            "classification": labels.classification,
            "roles": sorted(labels.roles),
            "tags": sorted(labels.tags),
        }
    return ok(info_dict(info) | {"labels": shown})


@endpoint("read", "GET", "/v1/files/read")
async def read(request: Request, args: ReadParams) -> Response:
    """Lines (``offset``/``limit``) as JSON text, or bytes (``start``/``end``) as they are;
    ``format=document``: a PDF's or Word document's lines as search indexes them."""
    ws = state_of(request).view(request)
    if args.start is not None or args.end is not None or args.format == "bytes":
        data = await ws.read_bytes(args.path, start=args.start, end=args.end)
        return Response(data, media_type="application/octet-stream")
    if args.format == "document":
        whole = await ws.read_bytes(args.path)
        text, _ = await asyncio.to_thread(document_text, whole, args.path)
        cap = ws.policy.limits.max_file_bytes
        content = document_window(text, args.path, args.offset, args.limit, cap)
        return ok({"path": args.path, "offset": args.offset, "content": content})
    content = await ws.read_text(args.path, offset=args.offset, limit=args.limit)
    return ok({"path": args.path, "offset": args.offset, "content": content})


@endpoint("write", "POST", "/v1/files/write", status=201)
async def write(request: Request, args: WriteParams) -> Response:
    ws = state_of(request).view(request)
    info = await ws.write(
        args.path,
        args.content,
        mode=args.mode,
        if_version=args.if_version,
        backup=args.backup,
        parents=args.parents,
    )
    return ok(info_dict(info), 201)


@endpoint("edit", "POST", "/v1/files/edit")
async def edit(request: Request, args: EditParams) -> Response:
    ws = state_of(request).view(request)
    result = await ws.edit(
        args.path, args.old, args.new, replace_all=args.replace_all, if_version=args.if_version
    )
    return ok({"path": result.path, "replacements": result.replacements, "version": result.version})


@endpoint("move", "POST", "/v1/files/move")
async def move(request: Request, args: TransferParams) -> Response:
    ws = state_of(request).view(request)
    return ok(info_dict(await ws.move(args.src, args.dst, overwrite=args.overwrite)))


@endpoint("copy", "POST", "/v1/files/copy", status=201)
async def copy(request: Request, args: TransferParams) -> Response:
    ws = state_of(request).view(request)
    return ok(info_dict(await ws.copy(args.src, args.dst, overwrite=args.overwrite)), 201)


@endpoint("delete", "POST", "/v1/files/delete")
async def delete(request: Request, args: DeleteParams) -> Response:
    ws = state_of(request).view(request)
    await ws.delete(args.path, recursive=args.recursive)
    return ok({"path": args.path, "deleted": True})


@endpoint("mkdir", "POST", "/v1/files/mkdir", status=201)
async def mkdir(request: Request, args: MkdirParams) -> Response:
    ws = state_of(request).view(request)
    await ws.mkdir(args.path, parents=args.parents, exist_ok=args.exist_ok)
    return ok({"path": args.path, "created": True}, 201)


@endpoint("glob", "GET", "/v1/files/glob")
async def glob(request: Request, args: GlobParams) -> Response:
    """At most :data:`MAX_ENTRIES` entries (a response cap, as for a listing)."""
    ws = state_of(request).view(request)
    found = await ws.glob(args.pattern, path=args.path, limit=args.limit or MAX_ENTRIES)
    return ok({"entries": [info_dict(e) for e in found]})


@endpoint("grep", "GET", "/v1/files/grep")
async def grep(request: Request, args: GrepParams) -> Response:
    ws = state_of(request).view(request)
    result = await ws.grep(
        args.pattern,
        args.path,
        regex=args.regex,
        ignore_case=args.ignore_case,
        context=args.context,
        glob=args.glob or None,
        max_total=args.max_total,
    )
    return ok(result.to_dict())


ENDPOINTS: tuple[Endpoint, ...] = (
    list_files,
    stat,
    read,
    write,
    edit,
    move,
    copy,
    delete,
    mkdir,
    glob,
    grep,
)
routes = [e.route() for e in ENDPOINTS]
