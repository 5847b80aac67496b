"""Fixtures shared by the governance tests: real signing keys for the JWT suites (generated once
per run; PEM helpers are in ``jwt_keys.py``)."""

from __future__ import annotations

import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa


@pytest.fixture(scope="session")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def ed_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


@pytest.fixture(scope="session")
def hs_secret() -> bytes:
    """Long enough for HS512 (64 bytes), so one secret serves every HMAC algorithm."""
    return secrets.token_bytes(64)
