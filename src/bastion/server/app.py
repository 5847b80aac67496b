"""The ASGI application: ``/v1`` API, ``/mcp`` per token, the web page, one workspace.

:func:`create_app` takes a built workspace (its owner view: every request gets a view for its
own principal) and the identity configuration; :func:`app_from_file` builds both from one
workspace file (its ``[server]`` and ``[identity]`` tables are the server's; the rest is the
workspace, checked by :class:`~bastion.config.WorkspaceConfig`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from bastion.server import (
    oidc,
    routes_admin,
    routes_auth,
    routes_changes,
    routes_chat,
    routes_files,
    routes_knowledge,
    routes_overlay,
)
from bastion.server.accounts import Accounts
from bastion.server.assets import Assets
from bastion.server.auth import Authenticator, DemoLogin
from bastion.server.conversations import conversation_book
from bastion.server.errors import error_response
from bastion.server.mcp_http import McpHub
from bastion.server.metrics import Measure
from bastion.server.middleware import AccessLog, BodyLimit, RequestShape, SecurityHeaders
from bastion.server.openapi import openapi_document
from bastion.server.origin import HostGuard
from bastion.server.reload import ConfigWatch, Refresh
from bastion.server.revocations import Revocations
from bastion.server.sessions import Sessions
from bastion.server.settings import ServerSettings
from bastion.server.shared import SharedState
from bastion.server.state import ServerState

if TYPE_CHECKING:
    from bastion.core.principal import Principal
    from bastion.governance.identity_config import IdentityConfig
    from bastion.server.file import ServerFile
    from bastion.workspace import Workspace

__all__ = ["STATIC", "create_app"]

STATIC = Path(__file__).resolve().parent / "static"


def create_app(
    workspace: Workspace,
    *,
    identity: IdentityConfig | None = None,
    settings: ServerSettings | None = None,
    demo_users: Sequence[tuple[Principal, str]] = (),
    source: ServerFile | None = None,
    shared: SharedState | None = None,
) -> Starlette:
    """The server for ``workspace``. Tokens are verified with ``identity``; with
    ``settings.demo_login``, ``demo_users`` (principal, about) may sign in by name.

    ``source``: the workspace file all of these came from; the server follows it (a change
    applies to the next request, :mod:`bastion.server.reload`) and shares revocations through
    its ``[server] shared_state`` (or ``shared``, when given)."""
    from bastion.governance.identity import JwtVerifier

    chosen = settings or ServerSettings()
    verifier = JwtVerifier(identity, policy=workspace.policy) if identity is not None else None
    demo = None
    if chosen.demo_login:
        demo = DemoLogin({p.id: p for p, _ in demo_users}, workspace.policy)
    watch = None
    if source is not None and source.path is not None:
        watch = ConfigWatch(source.path, lambda p, env: type(source).read(p, env=env), source.env)
        if shared is None:
            shared = SharedState(chosen.shared_state, base=source.path.resolve().parent)
    accounts = sessions = None
    if shared is not None and source is not None:
        accounts = Accounts(shared)
        sessions = Sessions(accounts.session_secret(), source.workspace.users, workspace.policy)
    revocations = Revocations(shared) if shared is not None else None
    state = ServerState(
        workspace,
        Authenticator(verifier, demo, revocations, sessions),
        chosen,
        demo_users=tuple((p.id, about) for p, about in demo_users) if demo else (),
        source=source,
    )
    state.accounts = accounts
    hub = McpHub(state)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hangup = _on_hangup(watch)
        async with hub.run():
            yield
        hangup()
        job = state.index_job.task
        if job is not None and not job.done():
            job.cancel()

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    assets = Assets(STATIC)

    routes: list[BaseRoute] = [
        *routes_files.routes,
        *routes_knowledge.routes,
        *routes_admin.routes,
        *routes_changes.routes,
        *routes_overlay.routes,
        *routes_auth.routes,
        *routes_chat.routes,
        *oidc.routes,
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/mcp", hub, methods=["GET", "POST", "DELETE"]),
        Route("/", assets.page, methods=["GET"]),
        Mount(
            "/static",
            routes=[
                Route("/{name}", assets.file, methods=["GET"]),
                Route("/{version}/{name}", assets.file, methods=["GET"]),
            ],
        ),
    ]
    middleware = [
        Middleware(Measure, metrics=state.metrics),
        Middleware(AccessLog),
        Middleware(SecurityHeaders),
        Middleware(HostGuard, hosts=chosen.host_names(), origins=chosen.trusted_origins()),
        Middleware(RequestShape),
        Middleware(Refresh, state=state, watch=watch),
    ]
    if chosen.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(chosen.cors_origins),
                allow_methods=["GET", "POST", "PUT", "DELETE"],
                allow_headers=["authorization", "content-type", "mcp-session-id"],
            )
        )
    middleware.append(
        Middleware(BodyLimit, default=chosen.max_body_bytes, uploads=chosen.max_upload_bytes)
    )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _refused, Exception: _refused},
    )
    app.state.bastion = state
    app.state.conversations = conversation_book(workspace, chosen, source)
    app.state.drain = hub.drain  # the server is stopping (bastion.server.lifecycle)

    return app


def _on_hangup(watch: ConfigWatch | None) -> Callable[[], None]:
    """``SIGHUP`` reloads the file on the next request (where signals can be caught: the
    main thread of a process on a POSIX system); the returned function undoes it."""
    if watch is None:
        return lambda: None
    loop = asyncio.get_running_loop()

    def hup() -> None:
        watch.forced = True

    try:
        loop.add_signal_handler(signal.SIGHUP, hup)
    except (ValueError, RuntimeError, NotImplementedError, AttributeError):
        return lambda: None

    def undo() -> None:
        loop.remove_signal_handler(signal.SIGHUP)

    return undo


async def _refused(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no route, wrong method) and anything unexpected outside the
    API's handlers: one JSON line like every other error (:func:`error_response`)."""
    return error_response(exc)
