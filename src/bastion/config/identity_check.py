"""``bastion config check`` on an ``[identity]`` table: what the server would meet when it first
verifies a token, met now.

Each configured key's material is read and parsed on its own (a ``pem_file`` that is missing or
unreadable, a file holding a private key or no key, an unset ``secret_env``), so that two bad
keys are two problems; then the table as a whole (``client_secret_env``, issuer, audience); then,
when the keys come from the provider (``discovery``, ``jwks_url``), the provider is reached once
with a short timeout: its discovery document (naming this issuer) and its key set (holding a key
Bastion can use). Each problem is one line naming its place, as for the mounts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bastion.core.errors import BastionError, ConfigurationError

__all__ = ["PROVIDER_TIMEOUT", "check_identity"]

PROVIDER_TIMEOUT = 3.0
"""Seconds each request to the identity provider may take during a check."""

Fetch = Callable[[str], Mapping[str, Any]]


def check_identity(
    raw: object,
    base: Path,
    environ: Mapping[str, str],
    problem: Callable[[str], None],
    *,
    fetch: Fetch | None = None,
) -> None:
    """Report (through ``problem``) every problem of the ``[identity]`` table ``raw``;
    ``fetch`` reads a provider URL as JSON (default: ``httpx``, :data:`PROVIDER_TIMEOUT`)."""
    from bastion.governance.identity_config import IdentityConfig
    from bastion.governance.identity_keys import VerificationKey

    if not isinstance(raw, Mapping):
        problem("identity: must be a table")
        return
    reported: set[str] = set()
    keys = raw.get("keys", [])
    for key in keys if isinstance(keys, list) else []:
        if not isinstance(key, Mapping):
            continue  # the table's own check below says so
        try:
            VerificationKey.from_dict(key, base_dir=base, environ=environ)
        except ConfigurationError as exc:
            reported.add(str(exc))
            problem(f"identity: {exc}")
    try:
        config = IdentityConfig.from_dict(raw, base_dir=base, environ=environ)
    except ConfigurationError as exc:
        text = str(exc)
        if text not in reported:  # else the first bad key again: said above
            problem(text if text.startswith("identity") else f"identity: {text}")
        return
    if config.remote_keys:
        _reach_provider(config, problem, fetch or _get_json)


def _reach_provider(config: Any, problem: Callable[[str], None], fetch: Fetch) -> None:
    from bastion.governance.identity_jwks import JwksKeys

    place = "identity discovery" if config.discovery else "identity jwks_url"
    issuer = config.issuer if isinstance(config.issuer, str) else config.issuer[0]
    keys = JwksKeys(
        issuer=issuer, jwks_url=config.jwks_url, discovery=config.discovery, fetch=fetch
    )
    try:
        keys.fetch()
    except BastionError as exc:
        problem(f"{place}: {exc}")
        return
    if not keys.usable():
        problem(f"{place}: the provider's key set holds no RSA or Ed25519 signing key")


def _get_json(url: str) -> Mapping[str, Any]:
    import httpx

    try:
        response = httpx.get(url, timeout=PROVIDER_TIMEOUT, follow_redirects=False)
        response.raise_for_status()
        data = response.json()
    except httpx.TimeoutException:
        raise ConfigurationError(f"{url} did not answer within {PROVIDER_TIMEOUT:g} s") from None
    except httpx.HTTPStatusError as exc:
        raise ConfigurationError(f"{url} answered HTTP {exc.response.status_code}") from None
    except httpx.HTTPError as exc:
        raise ConfigurationError(f"{url} cannot be reached ({type(exc).__name__})") from None
    except ValueError:
        raise ConfigurationError(f"{url} did not answer JSON") from None
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{url} did not answer a JSON object")
    return data
