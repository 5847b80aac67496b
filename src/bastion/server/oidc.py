"""The web page's sign-in at an OpenID Connect provider: the authorization code flow with PKCE.

1. ``GET /v1/auth/oidc/start`` sends the browser to the provider's authorization endpoint
   (found by discovery) with a fresh ``state``, ``nonce`` and PKCE ``S256`` challenge; the
   three are kept in a cookie sealed with the servers' session key (``HttpOnly``,
   ``SameSite=Lax``: the provider's redirect back is a cross-site navigation, ``Path`` limited
   to this flow, ten minutes).
2. ``GET /v1/auth/oidc/callback`` checks the ``state`` against that cookie, exchanges the code
   (with the PKCE verifier) at the token endpoint, verifies the ID token as any bearer token
   (keys from the JWKS URL, issuer, audience = the client id, times, claims mapping,
   revocations) and its ``nonce``, then sets it as the session cookie (``HttpOnly``,
   ``SameSite=Strict``, ``Secure`` over TLS; it ends when the ID token expires) and sends the
   browser to the page.

Every failure is a ``400``/``401`` with one line; the provider's own error text is never shown.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
import httpx
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bastion.core.errors import BastionError
from bastion.governance.errors import AuthenticationError
from bastion.governance.identity_jwks import check_provider_url
from bastion.governance.identity_token import read_token
from bastion.server.errors import ApiError
from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.sessions import COOKIE
from bastion.server.state import ServerState, state_of
from bastion.workspace.operations.service import OidcCallbackParams

__all__ = ["ENDPOINTS", "routes"]

FLOW_COOKIE = "bastion_oidc_flow"
_FLOW_AUDIENCE = "bastion-oidc-flow"
_FLOW_PATH = "/v1/auth/oidc"
_FLOW_SECONDS = 600.0


def _configured(state: ServerState) -> tuple[Any, Any, Any]:
    verifier, sessions = state.auth.verifier, state.auth.sessions
    if (
        verifier is None
        or verifier.jwks is None
        or verifier.config.client_id is None
        or sessions is None
    ):
        raise ApiError(404, "not_found", "this server has no OpenID Connect sign-in")
    return verifier, verifier.jwks, sessions


async def _endpoints(jwks: Any) -> dict[str, Any]:
    if not jwks.endpoints:
        try:
            await anyio.to_thread.run_sync(jwks.fetch)
        except BastionError as exc:
            raise ApiError(502, "provider_unavailable", f"the identity provider: {exc}") from None
    return dict(jwks.endpoints)


def _callback_url(request: Request) -> str:
    # the Host was checked against this server's names (bastion.server.origin)
    return f"{request.url.scheme}://{request.headers['host']}{_FLOW_PATH}/callback"


@endpoint("sign_in_methods", "GET", "/v1/auth/methods", public=True)
async def methods(request: Request, _: object) -> Response:
    state = state_of(request)
    verifier = state.auth.verifier
    oidc = bool(
        verifier is not None
        and verifier.config.client_id is not None
        and state.auth.sessions is not None
    )
    return ok({"accounts": state.accounts is not None, "oidc": oidc})


@endpoint("oidc_start", "GET", f"{_FLOW_PATH}/start", public=True, status=302)
async def start(request: Request, _: object) -> Response:
    verifier, jwks, sessions = _configured(state_of(request))
    found = await _endpoints(jwks)
    where = check_provider_url(str(found.get("authorization_endpoint", "")), "authorization")
    code_verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(code_verifier.encode()).digest())
    flow = {
        "state": secrets.token_urlsafe(24),
        "nonce": secrets.token_urlsafe(24),
        "verifier": code_verifier,
    }
    query = {
        "response_type": "code",
        "client_id": verifier.config.client_id,
        "redirect_uri": _callback_url(request),
        "scope": "openid",
        "state": flow["state"],
        "nonce": flow["nonce"],
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    response = RedirectResponse(f"{where}?{urlencode(query)}", status_code=302)
    response.set_cookie(
        FLOW_COOKIE,
        sessions.seal(flow, _FLOW_AUDIENCE, _FLOW_SECONDS),
        max_age=int(_FLOW_SECONDS),
        path=_FLOW_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


@endpoint("oidc_callback", "GET", f"{_FLOW_PATH}/callback", public=True, status=302)
async def callback(request: Request, args: OidcCallbackParams) -> Response:
    state = state_of(request)
    verifier, jwks, sessions = _configured(state)
    if args.error:
        raise AuthenticationError("the identity provider did not sign you in: try again")
    sealed = request.cookies.get(FLOW_COOKIE)
    code, sent = args.code, args.state
    if not sealed or not code or not sent:
        raise ApiError(400, "bad_sign_in", "sign-in was not started here: start it again")
    flow = sessions.unseal(sealed, _FLOW_AUDIENCE)
    if not secrets.compare_digest(str(flow.get("state", "")), sent):
        raise ApiError(400, "bad_sign_in", "sign-in state does not match: start it again")
    found = await _endpoints(jwks)
    token_url = check_provider_url(str(found.get("token_endpoint", "")), "token endpoint")
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": _callback_url(request),
        "code_verifier": str(flow.get("verifier", "")),
        "client_id": verifier.config.client_id,
    }
    if verifier.config.client_secret is not None:
        form["client_secret"] = verifier.config.client_secret
    try:
        async with httpx.AsyncClient(timeout=10, follow_redirects=False) as client:
            answer = await client.post(token_url, data=form)
        id_token = answer.json().get("id_token") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        id_token = None
    if not isinstance(id_token, str):
        raise AuthenticationError("the identity provider refused the sign-in: start it again")
    await state.auth.prepare(f"Bearer {id_token}")
    identity = state.auth.authenticate(f"Bearer {id_token}")
    claims = read_token(id_token, verifier.config.max_token_bytes).payload
    if not secrets.compare_digest(str(claims.get("nonce", "")), str(flow.get("nonce", ""))):
        raise AuthenticationError("the ID token was not made for this sign-in: start it again")
    request.state.principal = identity.principal.id
    expires = claims.get("exp")
    left = int(expires - time.time()) if isinstance(expires, int | float) else 0
    response = RedirectResponse("/", status_code=302)
    response.set_cookie(
        COOKIE,
        id_token,
        max_age=max(left, 1),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    response.delete_cookie(FLOW_COOKIE, path=_FLOW_PATH)
    return response


ENDPOINTS: tuple[Endpoint, ...] = (methods, start, callback)
routes = [e.route() for e in ENDPOINTS]
