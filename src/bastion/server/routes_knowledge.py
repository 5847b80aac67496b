"""``/v1/search``, ``/v1/ask`` (JSON or Server-Sent Events), ``/v1/ingest`` and the index."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bastion.core.errors import PolicyDeniedError
from bastion.core.models import Action, WriteMode
from bastion.governance.answer.text import number_markers
from bastion.server.errors import ApiError, describe, status_of
from bastion.server.handlers import Endpoint, endpoint, ok, parse_args
from bastion.server.state import ServerState, state_of
from bastion.server.uploads import read_upload
from bastion.workspace.operations.knowledge import (
    AskParams,
    IngestParams,
    RepairParams,
    SearchParams,
)

__all__ = ["ENDPOINTS", "routes"]

_MAX_UPLOAD_FILES = 20


async def _search(request: Request, args: SearchParams) -> Response:
    ws = state_of(request).view(request)
    result = await ws.search(
        args.query,
        mode=args.mode,
        k=args.k,
        path=args.path,
        filter=getattr(args, "filter", None),
        related=args.related,
    )
    return ok(
        {
            "query": result.query,
            "mode": result.mode,
            "hits": [
                {
                    "path": h.path,
                    "lines": [h.start_line, h.end_line],
                    "snippet": h.snippet,
                    "score": h.score,
                    "chunk_id": h.chunk_id,
                    "section": h.section,
                    "title": h.title,
                }
                for h in result.hits
            ],
        }
    )


search_query = endpoint("search", "GET", "/v1/search", exclude=("filter",))(_search)
search_body = endpoint("search", "POST", "/v1/search")(_search)


def answer_parts(answer: Any) -> dict[str, Any]:
    """The answer with ``[n]`` markers, its numbered citations and the verification."""
    numbers = {c.chunk_id: i for i, c in enumerate(answer.citations, start=1)}
    verification = answer.verification
    return {
        "answer": number_markers(answer.answer, numbers),
        "status": answer.status.value,
        "citations": [
            {
                "n": numbers[c.chunk_id],
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "lines": [c.start_line, c.end_line],
            }
            for c in answer.citations
        ],
        "verification": {
            "verified": answer.verified,
            "verdict": answer.verdict,
            "problems": [] if verification is None else list(verification.problems),
        },
        "mode": answer.mode,
        "notes": list(answer.notes),
    }


def sse_event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


@endpoint("ask", "POST", "/v1/ask")
async def ask(request: Request, args: AskParams) -> Response:
    """The answer as JSON, or as events when the client accepts ``text/event-stream``:
    ``answer`` (pieces of text), then ``citations``, ``verification`` and ``done``."""
    ws = state_of(request).view(request)
    question = args.question
    options: dict[str, Any] = {
        "k": args.k,
        "mode": args.mode,
        "path": args.path,
        "filter": args.filter,
        "budget_tokens": args.budget_tokens,
    }
    if "text/event-stream" not in request.headers.get("accept", ""):
        return ok(answer_parts(await ws.ask(question, **options)))

    async def events() -> AsyncIterator[bytes]:
        yield sse_event("status", {"stage": "retrieving"})
        try:
            parts = answer_parts(await ws.ask(question, **options))
        except Exception as exc:  # noqa: BLE001 - the error is the stream's last event
            status, code, message = describe(exc)
            yield sse_event("error", {"status": status, "code": code, "message": message})
            return
        words = parts["answer"].split(" ")
        for start in range(0, len(words), 8):
            piece = " ".join(words[start : start + 8])
            yield sse_event("answer", {"text": piece + (" " if start + 8 < len(words) else "")})
            await asyncio.sleep(0)
        yield sse_event("citations", {"citations": parts["citations"]})
        yield sse_event("verification", parts["verification"] | {"status": parts["status"]})
        yield sse_event("done", {"mode": parts["mode"], "notes": parts["notes"]})

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )


@endpoint("ingest", "POST", "/v1/ingest", status=201, source="form")
async def ingest(request: Request, _: None) -> Response:
    """Files of a multipart form into the folder ``path``: each written through the guard,
    and indexed before the response (the write updates the index)."""
    ws = state_of(request).view(request)
    async with read_upload(
        request, fields=tuple(IngestParams.model_fields), max_files=_MAX_UPLOAD_FILES
    ) as form:
        fields = {k: v for k, v in form.items() if k != "file"}
        args = parse_args(IngestParams, fields, "form")
        base = ws.parse_path(args.path, operation="ingest")
        overwrite = args.overwrite
        uploads = [f for f in form.getlist("file") if isinstance(f, UploadFile)]
        if not uploads:
            raise ApiError(400, "missing_field", "no 'file' part in the form")
        written = []
        for upload in uploads:
            name = (upload.filename or "").replace("\\", "/").rsplit("/", 1)[-1]
            if not name:
                raise ApiError(400, "bad_field", "an uploaded file has no name")
            data = await upload.read()
            info = await ws.write(
                base.child(name),
                data,
                mode=WriteMode.OVERWRITE if overwrite else WriteMode.CREATE,
            )
            written.append({"path": str(info.path), "size": info.size, "version": info.version})
    return ok({"files": written, "indexed": ws.has_index}, 201)


@endpoint("index_status", "GET", "/v1/index/status")
async def index_status(request: Request, _: object) -> Response:
    state = state_of(request)
    ws = state.view(request)
    data: dict[str, Any] = {"has_index": ws.has_index, "modes": list(ws.search_modes)}
    if state.may(ws, Action.REINDEX):
        data["job"] = state.index_job.to_dict(ws.principal.tenant)
    return ok(data)


@endpoint("index_repair", "POST", "/v1/index/repair", status=202)
async def index_repair(request: Request, args: RepairParams) -> Response:
    """Start repairing the index (operator: the ``reindex`` action on ``/``); poll the
    status for progress."""
    state = state_of(request)
    ws = state.view(request)
    if not ws.has_index:
        raise ApiError(409, "no_index", "this workspace keeps no search index")
    if not state.may(ws, Action.REINDEX):
        raise PolicyDeniedError(
            "repairing the index is an operator task: it needs the 'reindex' action on /"
        )
    job = state.index_job
    if job.running:
        return ok({"job": job.to_dict(ws.principal.tenant)}, 202)
    _start(state, ws, args.rebuild)
    return ok({"job": job.to_dict(ws.principal.tenant)}, 202)


def _start(state: ServerState, ws: Any, full: bool) -> None:
    job = state.index_job
    job.running, job.done, job.total, job.error = True, 0, 0, ""
    job.started_by, job.tenant, job.result = ws.principal.id, ws.principal.tenant, {}

    def progress(done: int, total: int, path: str) -> None:
        job.done, job.total = done, total

    async def run() -> None:
        try:
            summary = await (ws.rebuild_index if full else ws.reindex)(progress=progress)
            job.result = {
                "indexed": summary.indexed,
                "chunks": summary.chunks,
                "unchanged": summary.unchanged,
                "removed": summary.removed,
                "skipped": len(summary.skipped),
            }
        except Exception as exc:  # noqa: BLE001 - kept for the status, by its code only
            job.error = status_of(exc)[1]
        finally:
            job.running = False

    job.task = asyncio.get_running_loop().create_task(run())


ENDPOINTS: tuple[Endpoint, ...] = (
    search_query,
    search_body,
    ask,
    ingest,
    index_status,
    index_repair,
)
routes = [e.route() for e in ENDPOINTS]
