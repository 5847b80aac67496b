"""Signing in with a local account (:mod:`bastion.server.accounts`) and out again; the
operator's ``/metrics`` (:mod:`bastion.server.metrics`).

``POST /v1/auth/login`` checks the name and password (off the event loop: Argon2id is
deliberately slow) and answers with the session cookie; a wrong name and a wrong password get
the same ``401`` in the same time. Failed attempts are limited per name and per client
(:class:`~bastion.server.sessions.LoginLimiter`). ``POST /v1/auth/logout`` revokes the session
in the shared state (every process refuses it within a second) and clears the cookie.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response

from bastion.governance.errors import AuthenticationError
from bastion.governance.identity_token import read_token
from bastion.server.errors import ApiError
from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.metrics import page
from bastion.server.sessions import COOKIE, TTL_SECONDS
from bastion.server.state import state_of
from bastion.workspace.operations.service import LoginParams

__all__ = ["ENDPOINTS", "routes"]


def _no_accounts() -> ApiError:
    return ApiError(404, "not_found", "this server has no local accounts")


@endpoint("login", "POST", "/v1/auth/login", public=True)
async def login(request: Request, args: LoginParams) -> Response:
    state = state_of(request)
    accounts, sessions = state.accounts, state.auth.sessions
    if accounts is None or sessions is None:
        raise _no_accounts()
    client = request.client.host if request.client else "-"
    state.logins.check(args.user, client)
    good = await anyio.to_thread.run_sync(accounts.verify, args.user, args.password)
    if not good or args.user not in sessions.users:
        state.logins.failed(args.user, client)
        raise AuthenticationError("wrong name or password, or the account is disabled")
    state.logins.succeeded(args.user)
    request.state.principal = args.user
    response = ok({"user": args.user})
    response.set_cookie(
        COOKIE,
        sessions.issue(args.user),
        max_age=TTL_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@endpoint("logout", "POST", "/v1/auth/logout")
async def logout(request: Request, _: object) -> Response:
    state = state_of(request)
    sessions, shared = state.auth.sessions, state.accounts
    cookie = request.cookies.get(COOKIE)
    if sessions is None or shared is None or cookie is None:
        raise _no_accounts() if sessions is None else AuthenticationError("not signed in")
    identity = state.identify(request)
    jti = read_token(cookie, sessions.verifier.config.max_token_bytes).payload.get("jti")
    if isinstance(jti, str):
        await anyio.to_thread.run_sync(shared.shared.revoke_token, jti)
    response = ok({"user": identity.principal.id})
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@endpoint("metrics", "GET", "/metrics", public=True, logged=False)
async def metrics(request: Request, _: object) -> Response:
    """Prometheus metrics of this process (no principal, path or query in them)."""
    return page(state_of(request).metrics)


ENDPOINTS: tuple[Endpoint, ...] = (login, logout, metrics)
routes = [e.route() for e in ENDPOINTS]
