"""Drives the real ASGI app in-process with raw scopes: any path, query string, header or
body split, exactly as a server could hand them over (no client cleans them up first)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import ASGIApp, Message


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run the app's lifespan (the MCP hub lives in it) around the block."""
    to_app, app_inbox = anyio.create_memory_object_stream[Message](4)
    to_test, test_inbox = anyio.create_memory_object_stream[Message](4)
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    async with to_app, app_inbox, to_test, test_inbox, anyio.create_task_group() as group:
        group.start_soon(app, scope, app_inbox.receive, to_test.send)
        await to_app.send({"type": "lifespan.startup"})
        started = await test_inbox.receive()
        assert started["type"] == "lifespan.startup.complete", started
        try:
            yield
        finally:
            await to_app.send({"type": "lifespan.shutdown"})
            await test_inbox.receive()


async def call(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    raw_path: bytes | None = None,
    query: bytes = b"",
    headers: Sequence[tuple[bytes, bytes]] = (),
    chunks: Sequence[bytes] = (),
    host: bytes = b"127.0.0.1:8765",
) -> Reply:
    """One request; ``chunks`` are sent as separate body messages (no ``Content-Length``
    unless ``headers`` has one); a ``host`` of ``b""`` sends no Host header."""
    sent = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    sent.append({"type": "http.request", "body": b"", "more_body": False})
    raw = list(headers)
    if host:
        raw.insert(0, (b"host", host))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": raw_path if raw_path is not None else path.encode("utf-8", "surrogatepass"),
        "root_path": "",
        "query_string": query,
        "headers": raw,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8765),
        "state": {},
    }
    got: list[Message] = []

    async def receive() -> Message:
        if sent:
            return sent.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    async def send(message: Message) -> None:
        got.append(message)

    with anyio.fail_after(30):
        await app(scope, receive, send)
    start = next(m for m in got if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in got if m["type"] == "http.response.body")
    head = {k.decode("latin-1"): v.decode("latin-1") for k, v in start.get("headers", [])}
    return Reply(start["status"], head, body)
