"""Key helpers shared by the JWT tests (``test_identity.py``, ``test_jwt_attacks.py``); the key
fixtures themselves are in this folder's ``conftest.py``."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization


def public_pem(key: Any) -> bytes:
    """The PEM (SubjectPublicKeyInfo) of a private key's public half."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
