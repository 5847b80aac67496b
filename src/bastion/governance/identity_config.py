"""What a JWT verifier trusts: keys, issuer, audience, algorithms, clock skew, claim mapping.

Everything is checked when the configuration is built, so a server refuses to start with a
configuration that could be attacked (``none`` in the allowlist, a key whose algorithm is not
allowed, two keys a token could not tell apart) instead of failing on the first request.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bastion.configfile import read_table
from bastion.core.errors import ConfigurationError
from bastion.core.schema import list_of_names, show
from bastion.governance.claims import ClaimsMapping
from bastion.governance.identity_jwks import check_provider_url
from bastion.governance.identity_keys import SUPPORTED_ALGORITHMS, VerificationKey

__all__ = ["DEFAULT_LEEWAY_SECONDS", "DEFAULT_MAX_TOKEN_BYTES", "IdentityConfig"]

DEFAULT_LEEWAY_SECONDS = 60.0
MAX_LEEWAY_SECONDS = 300.0
"""Clock skew is meant to be small; more than five minutes is a configuration mistake."""
DEFAULT_MAX_TOKEN_BYTES = 8192
_TOKEN_BYTES_RANGE = (256, 65536)


@dataclass(frozen=True, kw_only=True)
class IdentityConfig:
    """Who issues tokens we trust, for which audience, verified with which keys."""

    issuer: str | tuple[str, ...]
    """The ``iss`` every token must carry (one of them, when several are given)."""
    audience: str | tuple[str, ...]
    """This service's name(s); a token's ``aud`` must name at least one."""
    keys: tuple[VerificationKey, ...]
    """Keys, each bound to its algorithm; at most one without a ``kid`` (the default key)."""
    algorithms: frozenset[str] | None = None
    """The allowlist; ``None`` allows exactly the algorithms of the configured keys."""
    leeway_seconds: float = DEFAULT_LEEWAY_SECONDS
    """Clock skew allowed on ``exp``, ``nbf`` and ``iat``."""
    required_claims: frozenset[str] = frozenset({"exp"})
    """Claims that must be present besides ``iss``, ``aud`` and the mapped ones."""
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES
    """Longer tokens are refused before anything is decoded."""
    claims: ClaimsMapping = field(default_factory=ClaimsMapping)
    role_clearances: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Clearance an (effective) role brings: ``{"hr": "confidential"}``. A principal's maximum
    clearance is the highest of its own and those of its effective roles."""
    jwks_url: str | None = None
    """The provider's key set (JWKS), fetched and refetched on an unknown ``kid``
    (:mod:`bastion.governance.identity_jwks`); ``keys`` may then be empty."""
    discovery: bool = False
    """Find the key set (and the sign-in endpoints) in the issuer's
    ``/.well-known/openid-configuration``."""

    client_id: str | None = None
    """This service's client id at the provider: turns on the web page's sign-in (the
    authorization code flow with PKCE); the id must then be one of the ``audience``."""
    client_secret: str | None = field(default=None, repr=False)
    """For a confidential client (``client_secret_env`` in a file); ``None``: a public one."""

    @property
    def remote_keys(self) -> bool:
        """True when keys come from the provider (``jwks_url`` or ``discovery``)."""
        return self.jwks_url is not None or self.discovery

    def __post_init__(self) -> None:
        fix = object.__setattr__
        fix(self, "issuer", _names(self.issuer, "issuer"))
        fix(self, "audience", _names(self.audience, "audience"))
        fix(self, "keys", tuple(self.keys))
        fix(self, "required_claims", frozenset(_strs(self.required_claims, "required_claims")))
        fix(self, "role_clearances", _role_clearances(self.role_clearances))
        if self.jwks_url is not None:
            check_provider_url(self.jwks_url, "jwks_url")
        if self.client_id is not None:
            if not self.discovery:
                raise ConfigurationError("identity client_id needs discovery = true")
            audiences = (self.audience,) if isinstance(self.audience, str) else self.audience
            if self.client_id not in audiences:
                raise ConfigurationError(
                    "identity client_id must be one of the audience (its ID tokens name it)"
                )
        if not isinstance(self.discovery, bool):
            raise ConfigurationError("identity discovery must be true or false")
        if self.discovery:
            if not isinstance(self.issuer, str):
                raise ConfigurationError("identity discovery needs exactly one issuer")
            check_provider_url(self.issuer, "issuer (with discovery)")
        if not all(isinstance(k, VerificationKey) for k in self.keys) or not (
            self.keys or self.remote_keys
        ):
            raise ConfigurationError(
                "identity needs at least one key (VerificationKey), or jwks_url / discovery"
            )
        kids = [k.kid for k in self.keys]
        if kids.count(None) > 1:
            raise ConfigurationError(
                "at most one key may have no 'kid': a token could not say which one it means"
            )
        repeated = sorted({k for k in kids if k is not None and kids.count(k) > 1})
        if repeated:
            raise ConfigurationError(f"repeated key ids: {', '.join(repeated)}")
        allowed = (
            frozenset(k.algorithm for k in self.keys) | ({"RS256"} if self.remote_keys else set())
            if self.algorithms is None
            else frozenset(_strs(self.algorithms, "algorithms"))
        )
        if any(alg.strip().lower() == "none" for alg in allowed):
            raise ConfigurationError("the algorithm allowlist can never contain 'none'")
        unsupported = sorted(allowed - SUPPORTED_ALGORITHMS)
        if unsupported:
            known = ", ".join(sorted(SUPPORTED_ALGORITHMS))
            raise ConfigurationError(
                f"unsupported algorithms {', '.join(unsupported)}; supported: {known}"
            )
        for key in self.keys:
            if key.algorithm not in allowed:
                raise ConfigurationError(
                    f"{key.name} uses {key.algorithm}, which the allowlist does not include"
                )
        fix(self, "algorithms", allowed)
        leeway = self.leeway_seconds
        if (
            isinstance(leeway, bool)
            or not isinstance(leeway, int | float)
            or not math.isfinite(leeway)
            or not 0 <= leeway <= MAX_LEEWAY_SECONDS
        ):
            raise ConfigurationError(
                f"leeway_seconds must be a number from 0 to {MAX_LEEWAY_SECONDS:g}"
            )
        low, high = _TOKEN_BYTES_RANGE
        size = self.max_token_bytes
        if isinstance(size, bool) or not isinstance(size, int) or not low <= size <= high:
            raise ConfigurationError(f"max_token_bytes must be an integer from {low} to {high}")
        if not isinstance(self.claims, ClaimsMapping):
            raise ConfigurationError("claims must be a ClaimsMapping")

    @property
    def allowed_algorithms(self) -> frozenset[str]:
        """The allowlist, resolved (never ``None`` once built)."""
        assert self.algorithms is not None
        return self.algorithms

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        base_dir: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> IdentityConfig:
        """Build from plain data (an ``[identity]`` table of a TOML or YAML file).

        ``base_dir`` anchors relative ``pem_file`` / ``secret_file`` paths; ``environ``
        (default: the process environment) resolves ``secret_env``.
        """
        known = {
            "issuer",
            "audience",
            "keys",
            "algorithms",
            "leeway_seconds",
            "required_claims",
            "max_token_bytes",
            "claims",
            "role_clearances",
            "jwks_url",
            "discovery",
            "client_id",
            "client_secret_env",
        }
        unknown = set(data) - known
        if unknown:
            raise ConfigurationError(
                f"unknown identity keys: {', '.join(sorted(show(k) for k in unknown))}"
            )
        for name in ("issuer", "audience"):
            if name not in data:
                raise ConfigurationError(f"identity needs '{name}'")
        if "keys" not in data and "jwks_url" not in data and not data.get("discovery"):
            raise ConfigurationError("identity needs 'keys', 'jwks_url' or discovery = true")
        raw_keys = data.get("keys", [])
        if not isinstance(raw_keys, list) or not all(isinstance(k, Mapping) for k in raw_keys):
            raise ConfigurationError("identity 'keys' must be a list of tables")
        anchor = None if base_dir is None else Path(base_dir)
        keys = tuple(
            VerificationKey.from_dict(k, base_dir=anchor, environ=environ) for k in raw_keys
        )
        claims = data.get("claims", {})
        if not isinstance(claims, Mapping):
            raise ConfigurationError("identity 'claims' must be a table")
        kwargs: dict[str, Any] = {
            "issuer": data["issuer"],
            "audience": data["audience"],
            "keys": keys,
            "claims": ClaimsMapping.from_dict(claims),
        }
        for name in (
            "leeway_seconds",
            "max_token_bytes",
            "role_clearances",
            "jwks_url",
            "discovery",
        ):
            if name in data:
                kwargs[name] = data[name]
        if "client_id" in data:
            if not isinstance(data["client_id"], str) or not data["client_id"]:
                raise ConfigurationError("identity client_id must be a non-empty string")
            kwargs["client_id"] = data["client_id"]
        if "client_secret_env" in data:
            env = os.environ if environ is None else environ
            variable = data["client_secret_env"]
            if not isinstance(variable, str) or not env.get(variable):
                raise ConfigurationError(
                    f"identity client_secret_env: environment variable {show(variable)} is not set"
                )
            kwargs["client_secret"] = env[variable]
        for name in ("algorithms", "required_claims"):
            if name in data:
                kwargs[name] = frozenset(list_of_names(data[name], f"identity {name}"))
        return cls(**kwargs)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
    ) -> IdentityConfig:
        """Load ``.toml``, ``.yaml`` or ``.yml``: its ``identity`` table, or the whole file when
        it has none. Relative key files are found next to the configuration file."""
        file = Path(path)
        data = read_table(file, "identity file")
        table = data.get("identity", data)
        if not isinstance(table, Mapping):
            raise ConfigurationError(f"identity file {file}: 'identity' must be a table")
        try:
            return cls.from_dict(table, base_dir=file.parent, environ=environ)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{file}: {exc}") from None


def _strs(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        items = list(value)
        if all(isinstance(item, str) and item for item in items):
            return items
    raise ConfigurationError(f"{where} must be a list of non-empty strings")


def _names(value: object, where: str) -> str | tuple[str, ...]:
    items = _strs(value, where)
    if not items:
        raise ConfigurationError(f"identity needs a non-empty '{where}'")
    return items[0] if len(items) == 1 else tuple(items)


def _role_clearances(value: object) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in value.items()
    ):
        raise ConfigurationError("role_clearances must map role names to classifications")
    return MappingProxyType(dict(value))
