"""How ``bastion serve`` runs and stops: uvicorn on a bound socket, stopped gracefully.

On ``SIGTERM`` or ``SIGINT`` the server stops accepting at once (the listening socket is
closed: a new connection is refused), lets the requests already begun finish (a streamed
answer, an MCP call, an upload) for up to ``[server] shutdown_grace_s`` seconds, cuts those
still open after that, runs the application's shutdown, and the process exits ``0``. The
MCP sessions' listening streams (an MCP client's ``GET /mcp``, which carries only what the
server may send unasked and never ends by itself) are ended at once, cleanly, so they do not
hold the shutdown for the whole grace period; the client reconnects to another process. A
second ``SIGINT`` (Ctrl-C twice) stops without waiting.

uvicorn itself re-raises the signal once it has stopped (the process then dies of it, status
``-15``); a service manager reads that as a failure, so this server does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Generator
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bastion.server.errors import ApiError, error_response

__all__ = ["GracefulServer", "run"]

log = logging.getLogger("bastion.server")

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class GracefulServer(uvicorn.Server):
    """uvicorn's server, stopping as the module says."""

    def __init__(self, config: uvicorn.Config, *, drain: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._drain = drain

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        before = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        open_now = len(self.server_state.tasks)
        grace = self.config.timeout_graceful_shutdown
        log.warning(
            "stopping: no new connections; %d request(s) open, waiting up to %g s for them",
            open_now,
            grace or 0,
        )
        if self._drain is not None:
            self._drain()
        await super().shutdown(sockets)
        log.warning("stopped")


class _Cut:
    """A request cut at the end of the grace period is answered ``503`` when nothing was
    sent yet (uvicorn would answer ``500`` and log a traceback); a stream already begun just
    ends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if started:
                raise
            stopping = ApiError(503, "stopping", "the server stopped before answering; retry")
            await error_response(stopping)(scope, receive, send)


def run(app: Any, sock: socket.socket, *, grace: int, log_level: str = "warning") -> None:
    """Serve ``app`` on the bound ``sock`` until ``SIGTERM``/``SIGINT``, then stop gracefully
    within ``grace`` seconds (the module). Logging is the caller's (uvicorn configures none)."""
    from sse_starlette.sse import AppStatus

    # sse-starlette ends every event stream as soon as uvicorn is told to stop, MCP answers
    # still being computed included; here the MCP hub ends only the listening streams, and
    # the answers finish within the grace period.
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    state = getattr(app, "state", None)
    drain = getattr(state, "drain", None) if state is not None else None
    config = uvicorn.Config(
        _Cut(app),
        access_log=False,
        server_header=False,
        log_config=None,
        log_level=log_level,
        timeout_graceful_shutdown=grace,
    )
    server = GracefulServer(config, drain=drain)
    server.run(sockets=[sock])
