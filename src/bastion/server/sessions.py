"""Session cookies of the local accounts, and the limit on sign-in attempts.

A session is a short JWT (HS256, signed with the key kept in the shared state, so every
process accepts it) in the cookie ``bastion_session``: ``HttpOnly`` (no script reads it),
``SameSite=Strict`` (no other site's page sends it), ``Secure`` when the request came over
TLS, ``Path=/``. It names the account (``sub``), when it was issued (``iat``) and its id
(``jti``), so signing out, ``bastion token revoke`` and ``bastion user passwd|disable`` end it
through the shared revocations. Who the account acts as is read from the running
configuration's ``[users]`` on every request.

A request authenticated by its cookie that may change something (any method but ``GET`` and
``HEAD``) must carry an ``Origin`` header, which :mod:`bastion.server.origin` has checked is
this server's own page: with ``SameSite=Strict`` that makes cross-site request forgery fail
twice.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import jwt

from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.governance.claims import ClaimsMapping
from bastion.governance.errors import AuthenticationError
from bastion.governance.identity import Identity, IdentityConfig, JwtVerifier, VerificationKey
from bastion.server.errors import ApiError

__all__ = ["COOKIE", "LoginLimiter", "Sessions"]

COOKIE = "bastion_session"
ISSUER = "bastion-local-accounts"
AUDIENCE = "bastion-session"
KID = "bastion-session"
TTL_SECONDS = 8 * 3600


class Sessions:
    """Issues and verifies session cookies for the accounts of one configuration."""

    def __init__(
        self,
        secret: bytes,
        users: Mapping[str, Principal],
        policy: Policy,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self.users = users
        self.policy = policy
        self._clock = clock
        config = IdentityConfig(
            issuer=ISSUER,
            audience=AUDIENCE,
            keys=(VerificationKey.hmac(secret, algorithm="HS256", kid=KID),),
            required_claims=frozenset({"exp", "iat", "jti"}),
            claims=ClaimsMapping(tenant=None, roles=None, clearance=None, required=frozenset()),
        )
        self.verifier = JwtVerifier(config, policy=policy, clock=clock)

    def for_config(self, users: Mapping[str, Principal], policy: Policy) -> Sessions:
        """The same key (sessions stay open) under a reloaded configuration."""
        return Sessions(self._secret, users, policy, clock=self._clock)

    def issue(self, name: str) -> str:
        """A session for the account ``name`` (already checked)."""
        now = self._clock()
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": name,
            "iat": now,
            "exp": now + TTL_SECONDS,
            "jti": secrets.token_urlsafe(16),
        }
        return jwt.encode(claims, self._secret, algorithm="HS256", headers={"kid": KID})

    def seal(self, claims: Mapping[str, object], audience: str, ttl: float) -> str:
        """``claims`` signed with the session key, for ``audience``, valid ``ttl`` seconds
        (what a sign-in keeps in the browser between two of its steps)."""
        now = self._clock()
        body = {**claims, "aud": audience, "iat": now, "exp": now + ttl}
        return jwt.encode(body, self._secret, algorithm="HS256", headers={"kid": f"{KID}-seal"})

    def unseal(self, token: str, audience: str) -> dict[str, object]:
        """What :meth:`seal` signed; an :class:`AuthenticationError` when it was not this
        key, another audience, or expired."""
        try:
            found: dict[str, object] = jwt.decode(
                token, self._secret, algorithms=["HS256"], audience=audience
            )
        except jwt.PyJWTError:
            raise AuthenticationError(
                "sign-in expired or not started here: sign in again"
            ) from None
        return found

    def is_local(self, token: str) -> bool:
        """True when ``token`` is a session of a local account (else: the provider's)."""
        try:
            return bool(jwt.get_unverified_header(token).get("kid") == KID)
        except jwt.PyJWTError:
            return True  # refused by the local verification, with its reason

    def identify(self, token: str) -> Identity:
        """Who the session acts for now: its account's ``[users]`` entry."""
        sub = self.verifier.verify(token).id
        principal = self.users.get(sub)
        if principal is None:
            raise AuthenticationError(
                "this account is not a user of the workspace ([users]); ask its operator"
            )
        return Identity.resolve(principal, self.policy)


@dataclass
class LoginLimiter:
    """At most ``per_name`` failed sign-ins per account name and ``per_client`` per client
    address within ``window`` seconds; past that, attempts are refused (``429``) unchecked
    until the oldest failure leaves the window. Kept per process (a process of ``N`` lets at
    most ``N`` times as many through; the Argon2id cost bounds each one)."""

    per_name: int = 5
    per_client: int = 20
    window: float = 300.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def check(self, name: str, client: str) -> None:
        for key, limit in ((f"n:{name}", self.per_name), (f"c:{client}", self.per_client)):
            if len(self._recent(key)) >= limit:
                raise ApiError(
                    429, "too_many_attempts", "too many failed sign-ins; wait a few minutes"
                )

    def failed(self, name: str, client: str) -> None:
        if len(self._failures) > 10_000:
            self._failures.clear()
        for key in (f"n:{name}", f"c:{client}"):
            self._recent(key).append(self.clock())

    def succeeded(self, name: str) -> None:
        self._failures.pop(f"n:{name}", None)

    def _recent(self, key: str) -> deque[float]:
        found = self._failures.setdefault(key, deque())
        cut = self.clock() - self.window
        while found and found[0] < cut:
            found.popleft()
        return found
