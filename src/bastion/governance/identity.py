"""Principals from JWTs, and the identity a request acts with.

:class:`JwtVerifier` turns a bearer token into a :class:`~bastion.core.principal.Principal`,
in this order, stopping at the first refusal:

1. shape and size (:func:`~bastion.governance.identity_token.read_token`): three base64url
   parts, at most ``max_token_bytes``, JSON objects without repeated names, no ``crit``;
2. algorithm: never ``none`` (in any spelling), on the allowlist;
3. key: the one the header's ``kid`` names, or the default key when there is no ``kid``; the
   header's ``alg`` must equal *that key's* algorithm. This is checked here, before PyJWT
   runs, and PyJWT is then told to accept only that one algorithm: an HS256 token can never
   be verified with an RSA public key as its secret. ``jku``, ``x5u``, ``jwk`` and ``x5c``
   headers are ignored: keys come from configuration, or from the provider's JWKS URL the
   configuration names (:mod:`bastion.governance.identity_jwks`), never from the token;
4. signature (PyJWT), then issuer, audience and required claims (PyJWT);
5. times: ``exp``, ``nbf`` and ``iat``, with ``leeway_seconds`` of clock skew, against an
   injectable clock;
6. claims to principal (:class:`~bastion.governance.claims.ClaimsMapping`), with the clearance
   checked against the policy's classification order.

:class:`Identity` is what a request then carries: the principal, its effective roles (the role
graph's closure) and its maximum clearance, computed once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import jwt
from jwt.exceptions import (
    DecodeError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidJTIError,
    InvalidSignatureError,
    InvalidSubjectError,
    MissingRequiredClaimError,
    PyJWTError,
)

from bastion.core.errors import ConfigurationError
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.governance.claims import ClaimsMapping
from bastion.governance.errors import (
    AuthenticationError,
    MalformedTokenError,
    TokenAlgorithmError,
    TokenAudienceError,
    TokenClaimsError,
    TokenExpiredError,
    TokenIssuerError,
    TokenNotYetValidError,
    TokenSignatureError,
    UnknownKeyError,
)
from bastion.governance.identity_config import IdentityConfig
from bastion.governance.identity_jwks import JwksKeys
from bastion.governance.identity_keys import VerificationKey
from bastion.governance.identity_token import RawToken, describe_algorithm, read_token

__all__ = [
    "ClaimsMapping",
    "Identity",
    "IdentityConfig",
    "JwtVerifier",
    "PrincipalViews",
    "VerificationKey",
    "bearer_token",
]

_SIGNATURE = "token signature invalid: sign in again to get a new token"

_View_co = TypeVar("_View_co", covariant=True)
_T = TypeVar("_T")


class PrincipalViews(Protocol[_View_co]):
    """What :meth:`Identity.bind` needs: a view of the same thing acting for a principal
    (``Workspace`` and ``SyncWorkspace`` both have it; governance does not import them)."""

    def with_principal(self, principal: Principal) -> _View_co: ...


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a request acts for, worked out once: effective roles and maximum clearance.

    Build it with :meth:`resolve` (or :meth:`JwtVerifier.authenticate`) at the start of a
    request and pass it along; nothing downstream walks the role graph again for it.
    """

    principal: Principal
    """The principal, its ``clearance`` raised to :attr:`clearance`."""
    roles: frozenset[str]
    """The principal's roles plus everything they inherit in the policy's role graph."""
    clearance: str
    """The highest of the principal's clearance and those its effective roles bring."""

    @classmethod
    def resolve(
        cls,
        principal: Principal,
        policy: Policy,
        role_clearances: Mapping[str, str] | None = None,
    ) -> Identity:
        """Effective roles through ``policy.roles``; maximum clearance in
        ``policy.classifications`` order. Unknown levels never raise a clearance (fail closed)."""
        roles = policy.effective_roles(principal)
        order = policy.classifications.order
        brought = role_clearances or {}
        candidates = [principal.clearance, *(brought[r] for r in sorted(roles) if r in brought)]
        known = [level for level in candidates if level in order]
        clearance = max(known, key=order.index) if known else principal.clearance
        if clearance != principal.clearance:
            principal = replace(principal, clearance=clearance)
        return cls(principal, roles, clearance)

    def bind(self, workspace: PrincipalViews[_T]) -> _T:
        """A view of ``workspace`` acting for this identity (``with_principal``)."""
        return workspace.with_principal(self.principal)


class JwtVerifier:
    """Verifies bearer JWTs against one :class:`IdentityConfig`; safe to share across requests.

    ``policy`` supplies the role graph and the classification order (its default when
    omitted); ``clock`` returns the current Unix time (a fake one in tests).
    """

    def __init__(
        self,
        config: IdentityConfig,
        *,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.policy = policy if policy is not None else Policy()
        self._clock = clock
        self._by_kid = {key.kid: key for key in config.keys if key.kid is not None}
        self._default = next((key for key in config.keys if key.kid is None), None)
        self._allowed = config.allowed_algorithms
        self.jwks = (
            JwksKeys(
                issuer=config.issuer if isinstance(config.issuer, str) else config.issuer[0],
                jwks_url=config.jwks_url,
                discovery=config.discovery,
            )
            if config.remote_keys
            else None
        )
        """The provider's keys, when they come from its JWKS URL (fetched by the caller:
        :meth:`JwksKeys.fetch` blocks)."""
        self._jwt = jwt.PyJWT()
        self._check_levels()

    def _check_levels(self) -> None:
        """Every clearance the configuration can produce must be a known classification."""
        order = self.policy.classifications.order
        mapping = self.config.claims
        levels = {
            "claims.default_clearance": [mapping.default_clearance],
            "claims.clearance_map": list(mapping.clearance_map.values()),
            "role_clearances": list(self.config.role_clearances.values()),
        }
        for where, values in levels.items():
            unknown = sorted({v for v in values if v not in order})
            if unknown:
                raise ConfigurationError(
                    f"{where}: unknown classification {', '.join(unknown)}; "
                    f"known: {', '.join(order)}"
                )

    # -- public ------------------------------------------------------------------------------

    def verify(self, token: str | bytes) -> Principal:
        """The principal ``token`` proves, or an :class:`AuthenticationError` saying why not."""
        raw = read_token(token, self.config.max_token_bytes)
        key = self._key_for(raw)
        self._verify_signature_and_audience(raw, key)
        self._check_times(raw.payload)
        principal = self.config.claims.principal(raw.payload)
        if principal.clearance not in self.policy.classifications.order:
            path = self.config.claims.clearance or "clearance"
            raise TokenClaimsError(
                f"token claim {path!r} names an unknown classification: "
                "ask your identity provider for a valid clearance"
            )
        return principal

    def authenticate(self, token: str | bytes) -> Identity:
        """:meth:`verify`, then the effective roles and maximum clearance, once."""
        return Identity.resolve(self.verify(token), self.policy, self.config.role_clearances)

    def authenticate_header(self, authorization: str | None) -> Identity:
        """:meth:`authenticate` for an HTTP ``Authorization: Bearer <token>`` header value."""
        return self.authenticate(bearer_token(authorization))

    # -- steps -------------------------------------------------------------------------------

    def _key_for(self, raw: RawToken) -> VerificationKey:
        """The key the header selects, whose algorithm must be the header's ``alg``."""
        shown = describe_algorithm(raw.algorithm)
        if raw.algorithm not in self._allowed:
            allowed = ", ".join(sorted(self._allowed))
            raise TokenAlgorithmError(
                f"token algorithm {shown} is not allowed: use one of {allowed}"
            )
        key = self._by_kid.get(raw.kid) if raw.kid is not None else self._default
        if key is None and self.jwks is not None:
            key = self.jwks.key(raw.kid)  # the provider's published keys, last fetched
        if key is None and raw.kid is not None:
            raise UnknownKeyError(
                "token key id ('kid') names no trusted key: sign in again to get a token "
                "signed with a current key"
            )
        if key is None:
            raise UnknownKeyError(
                "token names no key id ('kid') and there is no default key: "
                "send a token whose header names its key"
            )
        if raw.algorithm != key.algorithm:
            # The algorithm-confusion defence: the key decides the algorithm, never the token.
            raise TokenAlgorithmError(
                f"token algorithm {shown} does not match the algorithm of its key: "
                "send a token signed the way that key expects"
            )
        return key

    def _verify_signature_and_audience(self, raw: RawToken, key: VerificationKey) -> None:
        config = self.config
        try:
            self._jwt.decode_complete(
                raw.text,
                key=key.material,
                algorithms=[key.algorithm],
                options={
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "require": sorted(config.required_claims),
                    "enforce_minimum_key_length": True,
                },
                audience=config.audience,
                issuer=config.issuer,
            )
        except InvalidSignatureError:
            raise TokenSignatureError(_SIGNATURE) from None
        except MissingRequiredClaimError as exc:
            raise TokenClaimsError(
                f"token is missing the required claim {exc.claim!r}: "
                "ask your identity provider to include it"
            ) from None
        except InvalidIssuerError:
            raise TokenIssuerError(
                "token issuer is not trusted: sign in with the configured identity provider"
            ) from None
        except InvalidAudienceError:
            raise TokenAudienceError(
                "token audience does not name this service: request a token for this service"
            ) from None
        except (InvalidSubjectError, InvalidJTIError) as exc:
            name = "sub" if isinstance(exc, InvalidSubjectError) else "jti"
            raise TokenClaimsError(
                f"token claim {name!r} must be a string: ask your identity provider for a "
                "valid token"
            ) from None
        except InvalidAlgorithmError:
            raise TokenAlgorithmError(
                f"token algorithm {describe_algorithm(raw.algorithm)} is not allowed: "
                "send a token signed the way its key expects"
            ) from None
        except DecodeError:
            raise MalformedTokenError(
                "token is not a well-formed JWT: send the signed token your identity "
                "provider issued"
            ) from None
        except PyJWTError:
            raise AuthenticationError("token refused: sign in again") from None

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now = self._clock()
        leeway = self.config.leeway_seconds
        times: dict[str, float] = {}
        for name in ("exp", "nbf", "iat"):
            value = claims.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TokenClaimsError(
                    f"token claim {name!r} has the wrong type: expected seconds since the epoch; "
                    "ask your identity provider for a valid token"
                )
            try:
                seconds = float(value)  # an integer past the float range cannot be a time
            except OverflowError:
                seconds = math.inf
            if not math.isfinite(seconds):
                raise TokenClaimsError(
                    f"token claim {name!r} is not a finite number: ask your identity provider "
                    "for a valid token"
                )
            times[name] = seconds
        if "exp" in times and now >= times["exp"] + leeway:
            raise TokenExpiredError("token expired: sign in again")
        if "nbf" in times and times["nbf"] > now + leeway:
            raise TokenNotYetValidError(
                "token is not valid yet ('nbf' in the future): retry later or check the clocks"
            )
        if "iat" in times and times["iat"] > now + leeway:
            raise TokenNotYetValidError(
                "token was issued in the future ('iat'): check the issuer's and this server's "
                "clocks"
            )


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value."""
    if not authorization or not authorization.strip():
        raise AuthenticationError("no credentials: send 'Authorization: Bearer <token>'")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise AuthenticationError(
            "credentials are not a bearer token: send 'Authorization: Bearer <token>'"
        )
    return token
