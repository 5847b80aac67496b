"""Keys published by an OpenID Connect provider: its JWKS URL, found by discovery or named.

The keys are fetched when first needed and kept; a token naming a key id (``kid``) that is not
among them makes the server fetch the set again (keys rotate at every real provider), at most
once per :data:`MIN_REFETCH_SECONDS`: a stream of tokens with made-up key ids costs one
request to the provider per interval, never one per token. Fetching is blocking (``httpx``):
a server calls :meth:`JwksKeys.fetch` in a worker thread, before the request is verified.

Only public keys are taken: RSA (``RS*``/``PS*``) and Ed25519 (``EdDSA``); a symmetric
(``oct``) key or a private key in the set is ignored, as are keys of other types, so a
published set can never make the server accept an HMAC token. Each key is bound to one
algorithm (its ``alg``, else ``RS256`` for RSA), as configured keys are.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from bastion.core.errors import ConfigurationError, OperationError
from bastion.governance.identity_keys import (
    EDDSA_ALGORITHM,
    RSA_ALGORITHMS,
    VerificationKey,
)

__all__ = ["MAX_KEYS", "MIN_REFETCH_SECONDS", "JwksKeys", "check_provider_url"]

MIN_REFETCH_SECONDS = 30.0
MAX_KEYS = 32
_MAX_BYTES = 256 * 1024
_TIMEOUT = 5.0


def check_provider_url(url: str, where: str) -> str:
    """``url`` when it is ``https``, or ``http`` to a loopback host (a provider on this
    machine: tests, development); a :class:`ConfigurationError` otherwise."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or not parts.hostname:
        raise ConfigurationError(f"identity {where} must be an https:// URL")
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise ConfigurationError(
            f"identity {where} must be an https:// URL (http only to localhost)"
        )
    return url


Fetch = Callable[[str], Mapping[str, Any]]


def _get_json(url: str) -> Mapping[str, Any]:
    import httpx

    try:
        response = httpx.get(url, timeout=_TIMEOUT, follow_redirects=False)
        response.raise_for_status()
        if len(response.content) > _MAX_BYTES:
            raise OperationError(f"identity provider answer from {url} is too large")
        data = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise OperationError(
            f"identity provider {url} could not be read ({type(exc).__name__})"
        ) from None
    if not isinstance(data, Mapping):
        raise OperationError(f"identity provider {url} did not answer a JSON object")
    return data


class JwksKeys:
    """The provider's current keys (see the module's docstring)."""

    def __init__(
        self,
        *,
        issuer: str,
        jwks_url: str | None = None,
        discovery: bool = False,
        fetch: Fetch = _get_json,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if jwks_url is None and not discovery:
            raise ConfigurationError("identity needs jwks_url or discovery = true")
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.discovery = discovery
        self.endpoints: Mapping[str, Any] = {}
        """The discovery document (``authorization_endpoint``, ``token_endpoint``...)."""
        self._fetch = fetch
        self._clock = clock
        self._keys: dict[str | None, VerificationKey] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> VerificationKey | None:
        """The key named ``kid``; without a ``kid``, the only key when there is one."""
        if kid is None:
            keys = list(self._keys.values())
            return keys[0] if len(keys) == 1 else None
        return self._keys.get(kid)

    def usable(self) -> bool:
        """True when the last fetch found a key Bastion verifies with."""
        return bool(self._keys)

    def wants(self, kid: str | None) -> bool:
        """True when a token naming ``kid`` should make the keys be fetched now: never
        fetched yet, or ``kid`` unknown and the last fetch older than the interval."""
        if self._fetched_at is None:
            return True
        if self.key(kid) is not None:
            return False
        return self._clock() - self._fetched_at >= MIN_REFETCH_SECONDS

    def fetch(self, kid: str | None = None) -> None:
        """Fetch the key set (and the discovery document the first time); blocking. Callers
        racing for the same unknown ``kid`` fetch once. A failure keeps the keys already
        known and counts as a fetch (bounded retries)."""
        with self._lock:
            if self._fetched_at is not None and not self.wants(kid):
                return
            self._fetched_at = self._clock()
            if self.discovery and not self.endpoints:
                found = self._fetch(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
                if found.get("issuer") != self.issuer:
                    raise OperationError(
                        "the identity provider's discovery document names another issuer"
                    )
                self.endpoints = dict(found)
            url = self.jwks_url or self.endpoints.get("jwks_uri")
            if not isinstance(url, str):
                raise OperationError("the identity provider publishes no jwks_uri")
            check_provider_url(url, "jwks_uri")
            self._keys = _keys(self._fetch(url))


def _keys(data: Mapping[str, Any]) -> dict[str | None, VerificationKey]:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    raw = data.get("keys")
    if not isinstance(raw, list):
        raise OperationError("the identity provider's key set has no 'keys' list")
    found: dict[str | None, VerificationKey] = {}
    for item in raw[:MAX_KEYS]:
        if not isinstance(item, Mapping) or item.get("use", "sig") != "sig":
            continue
        if item.get("kty") not in ("RSA", "OKP") or "d" in item:
            continue  # symmetric, unknown or private: never a verification key from a URL
        kid = item.get("kid")
        if kid is not None and not isinstance(kid, str):
            continue
        try:
            public = jwt.PyJWK(dict(item)).key
        except (jwt.PyJWTError, ValueError, TypeError):
            continue
        pem = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        try:
            if isinstance(public, RSAPublicKey):
                alg = item.get("alg", "RS256")
                if alg not in RSA_ALGORITHMS:
                    continue
                found[kid] = VerificationKey.rsa(pem, algorithm=alg, kid=kid)
            elif isinstance(public, Ed25519PublicKey):
                if item.get("alg", EDDSA_ALGORITHM) != EDDSA_ALGORITHM:
                    continue
                found[kid] = VerificationKey.ed25519(pem, kid=kid)
        except ConfigurationError:
            continue  # a key too short, say: left out
    return found
