"""Reading a compact JWT before trusting it: shape, size, header and payload, strictly.

This runs before any cryptography, on attacker-controlled bytes, so it is deliberately
narrow: exactly three base64url segments without padding, in canonical form; a header and a
payload that are JSON objects with no repeated member names (two ``alg`` or two ``sub`` members
would let two parsers disagree about what was signed) and no lone surrogates (``"\\ud800"``,
not text); a size cap checked first. Nothing here decides whether the token is *valid*; it
only decides whether it is worth verifying, and reads the header fields needed to pick a key.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from bastion.governance.errors import (
    MalformedTokenError,
    TokenAlgorithmError,
    TokenHeaderError,
    TokenSignatureError,
)

__all__ = ["KNOWN_JWA_NAMES", "RawToken", "describe_algorithm", "read_token"]

_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")
_KID_MAX = 256
_MALFORMED = "token is not a well-formed JWT: send the signed token your identity provider issued"
KNOWN_JWA_NAMES = frozenset(
    {
        "HS256",
        "HS384",
        "HS512",
        "RS256",
        "RS384",
        "RS512",
        "PS256",
        "PS384",
        "PS512",
        "ES256",
        "ES256K",
        "ES384",
        "ES512",
        "EdDSA",
        "Ed25519",
        "Ed448",
    }
)
"""Registered algorithm names: the only ``alg`` values an error message may repeat."""


@dataclass(frozen=True, slots=True)
class RawToken:
    """A token that has the right shape; nothing in it is trusted yet."""

    text: str
    header: dict[str, Any]
    payload: dict[str, Any]
    algorithm: str
    kid: str | None


def read_token(token: object, max_bytes: int) -> RawToken:
    """Parse ``token`` strictly, or raise the :class:`AuthenticationError` that explains why not.

    Checked here: size, shape, base64url, JSON objects without repeated names, ``alg`` (a
    string, never ``none``), ``kid`` (a short string when present), no ``crit``. The allowlist
    and the key's algorithm are checked by the verifier, which knows the keys.
    """
    if isinstance(token, bytes | bytearray):
        try:
            token = bytes(token).decode("ascii")
        except UnicodeDecodeError:
            raise MalformedTokenError(_MALFORMED) from None
    if not isinstance(token, str):
        raise MalformedTokenError(_MALFORMED)
    if len(token) > max_bytes:
        raise MalformedTokenError(
            f"token is longer than {max_bytes} bytes: send a shorter token (fewer claims)"
        )
    segments = token.split(".")
    if len(segments) != 3:
        raise MalformedTokenError(
            "token is not a compact signed JWT (three dot-separated parts): "
            "send the signed token your identity provider issued"
        )
    header_b64, payload_b64, signature_b64 = segments
    header = _object(_decode(header_b64))
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or not algorithm:
        raise MalformedTokenError("token header names no algorithm ('alg'): send a signed token")
    if algorithm.strip().lower() == "none":
        raise TokenAlgorithmError("token algorithm 'none' is not allowed: send a signed token")
    if "crit" in header:
        raise TokenHeaderError(
            "token header lists critical extensions ('crit'), which are not supported: "
            "send a plain signed JWT"
        )
    kid = header.get("kid")
    if kid is not None and (not isinstance(kid, str) or not 0 < len(kid) <= _KID_MAX):
        raise MalformedTokenError(
            "token key id ('kid') must be a short string: send the token your identity "
            "provider issued"
        )
    payload = _object(_decode(payload_b64))
    if not signature_b64:
        raise TokenSignatureError("token signature invalid: it is empty; sign in again")
    _decode(signature_b64)
    return RawToken(token, header, payload, algorithm, kid)


def describe_algorithm(algorithm: str) -> str:
    """``'RS512'`` for a registered algorithm name; a plain word for anything else, so an error
    never repeats arbitrary header text."""
    return f"{algorithm!r}" if algorithm in KNOWN_JWA_NAMES else "(unrecognized)"


def _decode(segment: str) -> bytes:
    if not segment or _SEGMENT.fullmatch(segment) is None or len(segment) % 4 == 1:
        raise MalformedTokenError(_MALFORMED)
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise MalformedTokenError(_MALFORMED) from None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != segment:
        # Non-canonical trailing bits: two spellings of one token; refuse the odd one.
        raise MalformedTokenError(_MALFORMED)
    return raw


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(
            raw.decode("utf-8"), object_pairs_hook=_unique_members, parse_constant=_no_constant
        )
        # A "\ud800" escape decodes to a lone surrogate: not text, and no log, database or
        # wire format downstream can store it. Such a member is refused, wherever it is.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeError, ValueError, RecursionError):
        raise MalformedTokenError(_MALFORMED) from None
    if not isinstance(value, dict):
        raise MalformedTokenError(_MALFORMED)
    return value


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise ValueError("repeated member name")
        result[name] = value
    return result


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity; Python's parser accepts them unless told not to."""
    raise ValueError(f"not JSON: {name}")
