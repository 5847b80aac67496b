"""Verification keys, each bound to the one algorithm it may verify.

A key is never used with an algorithm the token chooses: an HS256 secret verifies only HS256,
an RSA public key only its RS/PS algorithm, an Ed25519 key only EdDSA. That binding is what
defeats algorithm confusion (an attacker signing HS256 with the server's RSA public key as the
secret): the verifier compares the token's ``alg`` with the selected key's algorithm before
any cryptography runs.

Keys are checked when they are built: HMAC secrets at least as long as their hash (RFC 7518
section 3.2) and never PEM text, RSA keys of 2048 bits or more, public keys only (a private
key in a configuration file is a mistake we refuse).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from bastion.core.errors import ConfigurationError
from bastion.core.schema import show

__all__ = [
    "EDDSA_ALGORITHM",
    "HMAC_ALGORITHMS",
    "RSA_ALGORITHMS",
    "SUPPORTED_ALGORITHMS",
    "VerificationKey",
]

HMAC_ALGORITHMS: Mapping[str, int] = {"HS256": 32, "HS384": 48, "HS512": 64}
"""HMAC algorithms and the shortest secret (bytes) each accepts: the hash's output size."""
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
EDDSA_ALGORITHM = "EdDSA"
SUPPORTED_ALGORITHMS = frozenset({*HMAC_ALGORITHMS, *RSA_ALGORITHMS, EDDSA_ALGORITHM})
MIN_RSA_BITS = 2048
_KID_MAX = 256

KeyMaterial = bytes | RSAPublicKey | Ed25519PublicKey


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """One key and the single algorithm it verifies; build it with a class method."""

    algorithm: str
    """The only ``alg`` this key verifies (``HS256``, ``RS256``, ``EdDSA``...)."""
    material: KeyMaterial = field(repr=False)
    """The HMAC secret or the public key object; never shown in a repr."""
    kid: str | None = None
    """Key id the token's header names to select this key; ``None`` for the default key."""

    def __post_init__(self) -> None:
        if self.kid is not None and not (0 < len(self.kid) <= _KID_MAX):
            raise ConfigurationError(f"a key id must have 1 to {_KID_MAX} characters")
        material, algorithm = self.material, self.algorithm
        if algorithm in HMAC_ALGORITHMS:
            ok = isinstance(material, bytes)
        elif algorithm in RSA_ALGORITHMS:
            ok = isinstance(material, RSAPublicKey)
        elif algorithm == EDDSA_ALGORITHM:
            ok = isinstance(material, Ed25519PublicKey)
        else:
            raise ConfigurationError(_unsupported(algorithm))
        if not ok:
            raise ConfigurationError(f"{self.name}: the key material does not fit {algorithm}")

    @property
    def name(self) -> str:
        """How configuration errors name this key (its kid, never its material)."""
        return _label(self.kid)

    # -- builders ----------------------------------------------------------------------------

    @classmethod
    def hmac(
        cls, secret: str | bytes, *, algorithm: str = "HS256", kid: str | None = None
    ) -> VerificationKey:
        """A shared secret for ``HS256`` (or ``HS384``/``HS512``)."""
        if algorithm not in HMAC_ALGORITHMS:
            raise ConfigurationError(f"{algorithm!r} is not an HMAC algorithm (HS256/384/512)")
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        minimum = HMAC_ALGORITHMS[algorithm]
        if len(raw) < minimum:
            raise ConfigurationError(
                f"an {algorithm} secret needs at least {minimum} bytes (RFC 7518 3.2)"
            )
        if raw.lstrip().startswith((b"-----BEGIN", b"ssh-")):
            raise ConfigurationError(
                f"an {algorithm} secret must not be a PEM or SSH key: a public key used as a "
                "shared secret lets anyone who has it forge tokens"
            )
        return cls(algorithm, raw, kid)

    @classmethod
    def rsa(
        cls, pem: str | bytes, *, algorithm: str = "RS256", kid: str | None = None
    ) -> VerificationKey:
        """An RSA public key in PEM for ``RS256`` (or RS384/RS512/PS256/PS384/PS512)."""
        if algorithm not in RSA_ALGORITHMS:
            raise ConfigurationError(f"{algorithm!r} is not an RSA algorithm (RS*/PS*)")
        key = _public_key(pem, kid)
        if not isinstance(key, RSAPublicKey):
            raise ConfigurationError(f"{_label(kid)}: {algorithm} needs an RSA public key")
        if key.key_size < MIN_RSA_BITS:
            raise ConfigurationError(
                f"{_label(kid)}: RSA keys need at least {MIN_RSA_BITS} bits, not {key.key_size}"
            )
        return cls(algorithm, key, kid)

    @classmethod
    def ed25519(cls, pem: str | bytes, *, kid: str | None = None) -> VerificationKey:
        """An Ed25519 public key in PEM, for ``EdDSA``."""
        key = _public_key(pem, kid)
        if not isinstance(key, Ed25519PublicKey):
            raise ConfigurationError(f"{_label(kid)}: EdDSA needs an Ed25519 public key")
        return cls(EDDSA_ALGORITHM, key, kid)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        base_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> VerificationKey:
        """One ``[[keys]]`` table: ``algorithm``, optional ``kid``, and the material as
        ``secret`` / ``secret_env`` / ``secret_file`` (HMAC) or ``pem`` / ``pem_file``."""
        known = {"algorithm", "kid", "secret", "secret_env", "secret_file", "pem", "pem_file"}
        unknown = set(data) - known
        if unknown:
            raise ConfigurationError(
                f"unknown key fields: {', '.join(sorted(show(k) for k in unknown))}"
            )
        algorithm = data.get("algorithm")
        kid = data.get("kid")
        if not isinstance(algorithm, str):
            raise ConfigurationError("every key needs an 'algorithm' (HS256, RS256, EdDSA...)")
        if kid is not None and not isinstance(kid, str):
            raise ConfigurationError("a key's 'kid' must be a string")
        sources = [name for name in known - {"algorithm", "kid"} if name in data]
        if len(sources) != 1:
            raise ConfigurationError(
                f"{_label(kid)}: give exactly one of secret, secret_env, secret_file, pem, pem_file"
            )
        source = sources[0]
        hmac = algorithm in HMAC_ALGORITHMS
        if hmac != source.startswith("secret"):
            want = "secret, secret_env or secret_file" if hmac else "pem or pem_file"
            raise ConfigurationError(f"{_label(kid)}: {algorithm} keys take {want}")
        material = _material(source, data[source], kid, base_dir, environ)
        if hmac:
            return cls.hmac(material, algorithm=algorithm, kid=kid)
        if algorithm in RSA_ALGORITHMS:
            return cls.rsa(material, algorithm=algorithm, kid=kid)
        if algorithm == EDDSA_ALGORITHM:
            return cls.ed25519(material, kid=kid)
        raise ConfigurationError(_unsupported(algorithm))


def _material(
    source: str,
    value: object,
    kid: str | None,
    base_dir: Path | None,
    environ: Mapping[str, str] | None,
) -> bytes:
    if not isinstance(value, str):
        raise ConfigurationError(f"{_label(kid)}: {source} must be a string")
    if source == "secret_env":
        env = os.environ if environ is None else environ
        if value not in env:
            raise ConfigurationError(f"{_label(kid)}: environment variable {value} is not set")
        return env[value].encode("utf-8")
    if source in ("secret_file", "pem_file"):
        path = Path(value)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"{_label(kid)}: cannot read {path}: {exc}") from exc
        return raw.strip() if source == "secret_file" else raw
    return value.encode("utf-8")


def _public_key(pem: str | bytes, kid: str | None) -> object:
    raw = pem.encode("utf-8") if isinstance(pem, str) else pem
    if b"PRIVATE KEY" in raw:
        raise ConfigurationError(
            f"{_label(kid)}: give the public key, not the private key (keep that with the issuer)"
        )
    try:
        return load_pem_public_key(raw)
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(f"{_label(kid)}: not a PEM public key") from exc


def _label(kid: str | None) -> str:
    return f"key {kid!r}" if kid is not None else "the default key"


def _unsupported(algorithm: str) -> str:
    known = ", ".join(sorted(SUPPORTED_ALGORITHMS))
    return f"unsupported algorithm {algorithm!r}; supported: {known}"
