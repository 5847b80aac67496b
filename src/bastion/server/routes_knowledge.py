"""``/v1/search``, ``/v1/ask`` (JSON or Server-Sent Events), ``/v1/ingest`` and the index."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from bastion.core.errors import PolicyDeniedError
from bastion.core.models import Action, WriteMode
from bastion.governance.answer.text import number_markers
from bastion.server.errors import ApiError, describe, status_of
from bastion.server.handlers import api, body_json, flag, integer, ok, required, text
from bastion.server.state import ServerState, state_of

__all__ = ["routes"]

_MAX_K = 100
_MAX_QUESTION = 4000
_MAX_UPLOAD_FILES = 20


_MODES = ("bm25", "vector", "hybrid")


def _mode(body: Mapping[str, Any], ws: Any) -> str:
    """The mode asked for; by default hybrid where the index offers it, else bm25."""
    default = "hybrid" if "hybrid" in ws.search_modes else "bm25"
    mode = text(body, "mode", default) or default
    if mode not in _MODES:
        raise ApiError(400, "bad_field", f"'mode' must be one of {', '.join(_MODES)}")
    return mode


def _filter(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = body.get("filter")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError(400, "bad_field", "'filter' must be a JSON object")
    return value


@api
async def search(request: Request) -> Response:
    ws = state_of(request).view(request)
    body = await body_json(request) if request.method == "POST" else request.query_params
    result = await ws.search(
        required(body, "query"),
        mode=_mode(body, ws),
        k=integer(body, "k", 10, low=1, high=_MAX_K) or 10,
        path=text(body, "path", "/") or "/",
        filter=_filter(body) if request.method == "POST" else None,
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


def _answer_parts(answer: Any) -> dict[str, Any]:
    """The answer with ``[n]`` markers, its numbered citations and the verification."""
    numbers = {c.chunk_id: i for i, c in enumerate(answer.citations, start=1)}
    verification = answer.verification
    return {
        "answer": number_markers(answer.answer, numbers),
        "status": answer.status.value,
        "citations": [
            {"n": numbers[c.chunk_id], "path": c.path, "lines": [c.start_line, c.end_line]}
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


def _event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


@api
async def ask(request: Request) -> Response:
    """The answer as JSON, or as events when the client accepts ``text/event-stream``:
    ``answer`` (pieces of text), then ``citations``, ``verification`` and ``done``."""
    ws = state_of(request).view(request)
    body = await body_json(request)
    question = required(body, "question")
    if len(question) > _MAX_QUESTION:
        raise ApiError(413, "limit_exceeded", f"the question is over {_MAX_QUESTION} characters")
    options: dict[str, Any] = {
        "k": integer(body, "k", 8, low=1, high=_MAX_K) or 8,
        "mode": _mode(body, ws),
        "path": text(body, "path", "/") or "/",
        "filter": _filter(body),
    }
    if "text/event-stream" not in request.headers.get("accept", ""):
        return ok(_answer_parts(await ws.ask(question, **options)))

    async def events() -> AsyncIterator[bytes]:
        yield _event("status", {"stage": "retrieving"})
        try:
            parts = _answer_parts(await ws.ask(question, **options))
        except Exception as exc:  # noqa: BLE001 - the error is the stream's last event
            status, code, message = describe(exc)
            yield _event("error", {"status": status, "code": code, "message": message})
            return
        words = parts["answer"].split(" ")
        for start in range(0, len(words), 8):
            piece = " ".join(words[start : start + 8])
            yield _event("answer", {"text": piece + (" " if start + 8 < len(words) else "")})
            await asyncio.sleep(0)
        yield _event("citations", {"citations": parts["citations"]})
        yield _event("verification", parts["verification"] | {"status": parts["status"]})
        yield _event("done", {"mode": parts["mode"], "notes": parts["notes"]})

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )


@api
async def ingest(request: Request) -> Response:
    """Files of a multipart form into the folder ``path``: each written through the guard,
    and indexed before the response (the write updates the index)."""
    ws = state_of(request).view(request)
    async with request.form(max_files=_MAX_UPLOAD_FILES, max_fields=10) as form:
        folder = form.get("path")
        if not isinstance(folder, str) or not folder:
            raise ApiError(400, "missing_field", "'path' (the folder to upload into) is required")
        base = ws.parse_path(folder, operation="ingest")
        overwrite = form.get("overwrite") in ("true", "1")
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


@api
async def index_status(request: Request) -> Response:
    state = state_of(request)
    ws = state.view(request)
    data: dict[str, Any] = {"has_index": ws.has_index, "modes": list(ws.search_modes)}
    if state.may(ws, Action.REINDEX):
        data["job"] = state.index_job.to_dict()
    return ok(data)


@api
async def index_repair(request: Request) -> Response:
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
        return ok({"job": job.to_dict()}, 202)
    full = flag(await body_json(request), "rebuild")
    _start(state, ws, full)
    return ok({"job": job.to_dict()}, 202)


def _start(state: ServerState, ws: Any, full: bool) -> None:
    job = state.index_job
    job.running, job.done, job.total, job.error = True, 0, 0, ""
    job.started_by, job.result = ws.principal.id, {}

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


routes = [
    Route("/v1/search", search, methods=["GET", "POST"]),
    Route("/v1/ask", ask, methods=["POST"]),
    Route("/v1/ingest", ingest, methods=["POST"]),
    Route("/v1/index/status", index_status, methods=["GET"]),
    Route("/v1/index/repair", index_repair, methods=["POST"]),
]
