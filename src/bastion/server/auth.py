"""Who a request acts for: its bearer token, verified on every request.

Tokens are checked by :class:`~bastion.governance.identity.JwtVerifier` with the
``[identity]`` of the workspace file. The optional demo login (``[server] demo_login``) signs
short-lived HS256 tokens for the demo users with a secret made when the process starts (never
written anywhere), and verifies them with a second verifier of its own: a demo token is a real
JWT that goes through the same checks as any other.
"""

from __future__ import annotations

import copy
import logging
import secrets
import time
from collections.abc import Callable

import anyio.to_thread
import jwt

from bastion.core.errors import BastionError
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.governance.errors import AuthenticationError
from bastion.governance.identity import (
    Identity,
    IdentityConfig,
    JwtVerifier,
    VerificationKey,
    bearer_token,
)
from bastion.governance.identity_token import read_token
from bastion.server.revocations import Revocations
from bastion.server.sessions import Sessions

__all__ = ["DEMO_AUDIENCE", "DEMO_ISSUER", "DEMO_KID", "Authenticator", "DemoLogin"]

DEMO_ISSUER = "bastion-demo-login"
DEMO_AUDIENCE = "bastion"
DEMO_KID = "bastion-demo-login"
_DEMO_TTL = 3600

log = logging.getLogger("bastion.server")


class DemoLogin:
    """Signs tokens for named demo users; the secret lives only in this process."""

    def __init__(
        self,
        users: dict[str, Principal],
        policy: Policy,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.users = users
        self._secret = secrets.token_bytes(64)
        self._clock = clock
        self.verifier = self._verifier(policy)

    def _verifier(self, policy: Policy) -> JwtVerifier:
        config = IdentityConfig(
            issuer=DEMO_ISSUER,
            audience=DEMO_AUDIENCE,
            keys=(VerificationKey.hmac(self._secret, algorithm="HS256", kid=DEMO_KID),),
        )
        return JwtVerifier(config, policy=policy, clock=self._clock)

    def for_policy(self, policy: Policy) -> DemoLogin:
        """The same login (its secret: tokens already given stay valid) under ``policy``."""
        fresh = copy.copy(self)
        fresh.verifier = self._verifier(policy)
        return fresh

    def token_for(self, user_id: str) -> str:
        """A token for the demo user ``user_id`` (an :class:`AuthenticationError` otherwise)."""
        found = self.users.get(user_id)
        if found is None:
            raise AuthenticationError("no such demo user: pick one of the listed users")
        now = int(self._clock())
        claims = {
            "iss": DEMO_ISSUER,
            "aud": DEMO_AUDIENCE,
            "sub": found.id,
            "tenant": found.tenant,
            "roles": sorted(found.roles),
            "clearance": found.clearance,
            "iat": now,
            "exp": now + _DEMO_TTL,
        }
        return jwt.encode(claims, self._secret, algorithm="HS256", headers={"kid": DEMO_KID})


class Authenticator:
    """The identity of a request, from its ``Authorization`` header; a refusal is an
    :class:`AuthenticationError` whose one line says what to do."""

    def __init__(
        self,
        verifier: JwtVerifier | None,
        demo: DemoLogin | None,
        revocations: Revocations | None = None,
        sessions: Sessions | None = None,
    ) -> None:
        self.verifier = verifier
        self.demo = demo
        self.revocations = revocations
        """Revoked tokens (by ``jti`` or subject), checked after a token verifies."""
        self.sessions = sessions
        """The local accounts' session cookies (``None``: no accounts on this server)."""

    async def prepare(self, authorization: str | None, cookie: str | None = None) -> None:
        """Fetch the identity provider's keys (off the event loop) when the request's token
        names a key the last fetch did not have (at most once per interval:
        :mod:`bastion.governance.identity_jwks`); verification itself never waits."""
        jwks = self.verifier.jwks if self.verifier is not None else None
        if authorization is None and cookie is not None:
            authorization = f"Bearer {cookie}"
        if jwks is None or authorization is None:
            return
        try:
            kid = read_token(bearer_token(authorization), self.verifier_limit()).kid
        except AuthenticationError:
            return  # refused by the verification itself, with its reason
        if kid == DEMO_KID or not jwks.wants(kid):
            return
        try:
            await anyio.to_thread.run_sync(jwks.fetch, kid)
        except BastionError as exc:
            log.warning("identity provider keys: %s", exc)

    def verifier_limit(self) -> int:
        limits = [v.config.max_token_bytes for v in (self.verifier,) if v is not None]
        if self.demo is not None:
            limits.append(self.demo.verifier.config.max_token_bytes)
        return max(limits, default=8192)

    def authenticate_request(
        self, authorization: str | None, cookie: str | None, *, unsafe: bool, origin: bool
    ) -> Identity:
        """A bearer token when the request has one, else the session cookie. A request that
        may change something (``unsafe``) is taken on its cookie only with an ``Origin``
        header (one checked to be this server's page): cross-site request forgery."""
        if authorization is not None or cookie is None or self.sessions is None:
            return self.authenticate(authorization)
        if unsafe and not origin:
            raise AuthenticationError(
                "a change signed in by cookie must come from this server's page "
                "(no Origin header): send 'Authorization: Bearer <token>' instead"
            )
        if not self.sessions.is_local(cookie):  # the provider's ID token (the page's sign-in)
            return self.authenticate(f"Bearer {cookie}")
        identity = self.sessions.identify(cookie)
        if self.revocations is not None:
            limit = self.sessions.verifier.config.max_token_bytes
            self.revocations.check(read_token(cookie, limit).payload)
        return identity

    def authenticate(self, authorization: str | None) -> Identity:
        token = bearer_token(authorization)
        verifier = self._verifier_for(token)
        identity = verifier.authenticate(token)
        if self.revocations is not None:
            # the token verified: its claims are the issuer's
            self.revocations.check(read_token(token, verifier.config.max_token_bytes).payload)
        return identity

    def _verifier_for(self, token: str) -> JwtVerifier:
        if self.demo is not None:
            limit = self.demo.verifier.config.max_token_bytes
            if self.verifier is not None:
                limit = max(limit, self.verifier.config.max_token_bytes)
            if read_token(token, limit).kid == DEMO_KID:
                return self.demo.verifier
        if self.verifier is None:
            raise AuthenticationError(
                "this server trusts no identity provider: sign in with the demo login"
            )
        return self.verifier
