"""MCP over streamable HTTP at ``/mcp``, one tool set per principal.

Every request to ``/mcp`` carries a bearer token, verified like any API request. Each
principal gets its own MCP server (its :class:`~bastion.agents.tools.Toolset` over a view of
the workspace acting for it) with its own session manager, started on first use: a session id
belongs to the manager of the principal that opened it, so a session id presented with
another principal's token is unknown there (``404``, exactly like an id that never existed).
One server process thus serves many agents, each seeing only its own view.

A manager belongs to one configuration of the server (:attr:`ServerState.generation`): when
the workspace file is reloaded, the next request of a principal finds its old manager retired
and gets a new one over the new configuration, so a session id of the old one is unknown
(``404``: the client starts a new session, whose tools and answers follow the new policy).
A retired manager keeps running for :data:`_RETIRE_GRACE` seconds, so that answers already
streaming finish.

When the server stops (:meth:`McpHub.drain`), the sessions' listening streams (``GET /mcp``:
what the server may send unasked; they never end by themselves) are ended cleanly at once and
new ones are refused (``503``), while calls already running finish
(:mod:`bastion.server.lifecycle`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message, Receive, Scope, Send

from bastion.core.principal import Principal
from bastion.server.errors import ApiError, error_response

if TYPE_CHECKING:
    from bastion.server.state import ServerState

__all__ = ["McpHub"]

_IDLE_SECONDS = 1800.0
_RETIRE_GRACE = 60.0


class McpHub:
    """The ASGI app behind ``/mcp``: authenticates, then hands the request to the session
    manager of that principal."""

    def __init__(self, state: ServerState, *, max_principals: int = 1000) -> None:
        self.state = state
        self.max_principals = max_principals
        self._managers: dict[Principal, tuple[int, StreamableHTTPSessionManager, anyio.Event]] = {}
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None
        self._listening: set[anyio.CancelScope] = set()
        self.draining = False

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Keep the session managers running while the server runs (the app's lifespan)."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                self._group = None
                self._managers.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.requests import Request

        try:
            identity = self.state.identify(Request(scope))
            manager = await self._manager(identity.principal)
        except Exception as exc:  # noqa: BLE001 - every refusal is a JSON error
            await error_response(exc)(scope, receive, send)
            return
        if scope["method"] == "GET":
            await self._listen(manager, scope, receive, send)
            return
        await manager.handle_request(scope, receive, _one_line_errors(send))

    async def _listen(
        self, manager: StreamableHTTPSessionManager, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A session's listening stream, ended cleanly (the last chunk sent) on :meth:`drain`."""
        if self.draining:
            stopping = ApiError(503, "stopping", "the server is stopping; connect to another")
            await error_response(stopping)(scope, receive, send)
            return
        started = finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        with anyio.CancelScope() as listening:
            self._listening.add(listening)
            try:
                await manager.handle_request(scope, receive, _one_line_errors(tracked))
            finally:
                self._listening.discard(listening)
        if listening.cancelled_caught and started and not finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def drain(self) -> None:
        """The server is stopping: end the listening streams; refuse new ones."""
        self.draining = True
        for listening in list(self._listening):
            listening.cancel()

    async def _manager(self, principal: Principal) -> StreamableHTTPSessionManager:
        async with self._lock:
            generation = self.state.generation
            found = self._managers.get(principal)
            if found is not None:
                if found[0] == generation:
                    return found[1]
                del self._managers[principal]
                found[2].set()  # retired: its sessions are unknown from now on
            if self._group is None:
                raise ApiError(503, "starting", "the MCP endpoint is not running yet; retry")
            if len(self._managers) >= self.max_principals:
                raise ApiError(503, "too_many_agents", "too many MCP principals; retry later")
            manager = self._build(principal)
            started, retired = anyio.Event(), anyio.Event()

            async def keep() -> None:
                async with manager.run():
                    started.set()
                    await retired.wait()
                    await anyio.sleep(_RETIRE_GRACE)

            self._group.start_soon(keep)
            await started.wait()
            self._managers[principal] = (generation, manager, retired)
            return manager

    def _build(self, principal: Principal) -> StreamableHTTPSessionManager:
        from bastion.agents.mcp import mcp_server
        from bastion.agents.tools import Toolset

        toolset = Toolset(self.state.workspace.with_principal(principal))
        return StreamableHTTPSessionManager(
            app=mcp_server(toolset),
            max_request_body_size=self.state.settings.max_body_bytes,
            session_idle_timeout=_IDLE_SECONDS,
        )


def _one_line_errors(send: Send) -> Send:
    """``send`` for the MCP SDK's own refusals: a JSON-RPC error answered with a 4xx (a body
    that is not JSON-RPC, a missing session) keeps only the first line of its message, as
    every other error of the server does (the SDK's validation errors run to many lines,
    naming its internal types)."""
    held: list[Message] = []

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            kind = dict(message.get("headers", ())).get(b"content-type", b"")
            if message["status"] >= 400 and kind.startswith(b"application/json"):
                held.append(message)
                return
        elif held and message["type"] == "http.response.body":
            held.append(message)
            if message.get("more_body", False):
                return
            body = b"".join(m.get("body", b"") for m in held[1:])
            start = dict(held[0])
            body = _first_line(body)
            start["headers"] = [
                (k, str(len(body)).encode() if k.lower() == b"content-length" else v)
                for k, v in held[0].get("headers", ())
            ]
            held.clear()
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped


def _first_line(body: bytes) -> bytes:
    try:
        answer = json.loads(body)
        message = answer["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return body
    if not isinstance(message, str) or "\n" not in message:
        return body
    answer["error"]["message"] = message.split("\n", 1)[0].strip()
    return json.dumps(answer).encode()
