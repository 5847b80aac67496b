"""Keys from a provider's JWKS URL: fetched when first needed, fetched again when a token names
an unknown key id, at most once per interval, and only public RSA/Ed25519 keys are taken.

The fetch is our own port (a function of the URL): a fake one here counts the requests; the
real provider is driven end to end in tests/server/test_oidc.py."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from bastion import Policy
from bastion.core.errors import ConfigurationError
from bastion.governance.errors import UnknownKeyError
from bastion.governance.identity import IdentityConfig, JwtVerifier
from bastion.governance.identity_jwks import MIN_REFETCH_SECONDS, JwksKeys

ISSUER = "https://id.example.com"


class Provider:
    """What the fake fetch serves: a key set, and how often it was asked."""

    def __init__(self) -> None:
        self.private: dict[str, rsa.RSAPrivateKey] = {}
        self.extra: list[dict[str, Any]] = []
        self.fetches = 0
        self.now = 1000.0

    def rotate(self, kid: str) -> None:
        self.private[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def fetch(self, url: str) -> Mapping[str, Any]:
        assert url == f"{ISSUER}/jwks"
        self.fetches += 1
        keys = [
            {**jwt.algorithms.RSAAlgorithm.to_jwk(k.public_key(), as_dict=True), "kid": kid}
            for kid, k in self.private.items()
        ]
        return {"keys": [*keys, *self.extra]}

    def token(self, kid: str, sub: str = "ana") -> str:
        claims = {
            "iss": ISSUER,
            "aud": "bastion",
            "sub": sub,
            "tenant": "acme",
            "exp": int(time.time()) + 300,
        }
        return jwt.encode(claims, self.private[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def provider() -> Provider:
    found = Provider()
    found.rotate("k1")
    return found


def _verifier(provider: Provider) -> JwtVerifier:
    config = IdentityConfig(issuer=ISSUER, audience="bastion", keys=(), jwks_url=f"{ISSUER}/jwks")
    verifier = JwtVerifier(config, policy=Policy())
    assert verifier.jwks is not None
    verifier.jwks = JwksKeys(
        issuer=ISSUER, jwks_url=f"{ISSUER}/jwks", fetch=provider.fetch, clock=lambda: provider.now
    )
    return verifier


def _verify(verifier: JwtVerifier, token: str) -> str:
    """What a server does: fetch when the token asks for it, then verify."""
    kid = jwt.get_unverified_header(token).get("kid")
    assert verifier.jwks is not None
    if verifier.jwks.wants(kid):
        verifier.jwks.fetch(kid)
    return verifier.verify(token).id


def test_a_rotated_key_is_fetched_once_and_accepted(provider: Provider) -> None:
    verifier = _verifier(provider)
    assert _verify(verifier, provider.token("k1")) == "ana"
    assert _verify(verifier, provider.token("k1")) == "ana"
    assert provider.fetches == 1
    provider.rotate("k2")
    provider.now += MIN_REFETCH_SECONDS
    assert _verify(verifier, provider.token("k2")) == "ana"
    assert provider.fetches == 2


def test_unknown_key_ids_cost_one_fetch_per_interval(provider: Provider) -> None:
    verifier = _verifier(provider)
    _verify(verifier, provider.token("k1"))
    provider.rotate("k9")
    for n in range(50):
        token = jwt.encode(
            {"sub": "x"}, provider.private["k9"], algorithm="RS256", headers={"kid": f"made-up-{n}"}
        )
        with pytest.raises(UnknownKeyError):
            _verify(verifier, token)
    assert provider.fetches == 1
    provider.now += MIN_REFETCH_SECONDS
    with pytest.raises(UnknownKeyError):
        _verify(
            verifier,
            jwt.encode(
                {"sub": "x"}, provider.private["k9"], algorithm="RS256", headers={"kid": "another"}
            ),
        )
    assert provider.fetches == 2


def test_symmetric_and_private_keys_in_the_set_are_ignored(provider: Provider) -> None:
    secret = "s" * 64
    provider.extra = [
        {"kty": "oct", "kid": "hs", "k": jwt.utils.base64url_encode(secret.encode()).decode()},
        {**jwt.algorithms.RSAAlgorithm.to_jwk(provider.private["k1"], as_dict=True), "kid": "priv"},
    ]
    verifier = _verifier(provider)
    hs = jwt.encode(
        {
            "iss": ISSUER,
            "aud": "bastion",
            "sub": "mallory",
            "tenant": "acme",
            "exp": int(time.time()) + 300,
        },
        secret,
        algorithm="HS256",
        headers={"kid": "hs"},
    )
    with pytest.raises(Exception) as refused:
        _verify(verifier, hs)
    assert "not allowed" in str(refused.value)
    assert verifier.jwks is not None and verifier.jwks.key("priv") is None


@pytest.mark.parametrize(
    "url", ["http://id.example.com/jwks", "ftp://id.example.com/jwks", "jwks.json"]
)
def test_a_key_set_url_must_be_https(url: str) -> None:
    with pytest.raises(ConfigurationError, match="https://"):
        IdentityConfig(issuer=ISSUER, audience="bastion", keys=(), jwks_url=url)


def test_remote_keys_or_configured_keys_are_needed() -> None:
    with pytest.raises(ConfigurationError, match="jwks_url / discovery"):
        IdentityConfig(issuer=ISSUER, audience="bastion", keys=())
    with pytest.raises(ConfigurationError, match="needs 'keys', 'jwks_url'"):
        IdentityConfig.from_dict({"issuer": ISSUER, "audience": "bastion"})
