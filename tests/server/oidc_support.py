"""A real OpenID Connect provider on loopback (``oidc-provider-mock``, a Flask app run by
werkzeug in a thread) and a client that signs in at it with the authorization code flow and
PKCE, as a browser would, driven with httpx."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

with warnings.catch_warnings():
    # authlib warns about its own deprecated module on import, through an "always" filter it
    # installs itself: ignored after that filter is in place, and both undone on leaving
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore")
    from oidc_provider_mock import User, run_server_in_thread

CLIENT_ID = "bastion"


@contextlib.contextmanager
def provider(users: dict[str, dict[str, Any]]) -> Iterator[str]:
    """The provider's issuer URL while the block runs; ``users``: subject -> claims."""
    with (
        warnings.catch_warnings(),
        run_server_in_thread(
            port=0, user_claims=[User(sub=sub, claims=claims) for sub, claims in users.items()]
        ) as server,
    ):
        warnings.simplefilter("ignore")
        yield f"http://localhost:{server.server_port}"


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def id_token(issuer: str, sub: str, redirect: str = "http://127.0.0.1:9/cb") -> str:
    """Sign ``sub`` in at the provider (code flow with PKCE); its ID token."""
    found = httpx.get(f"{issuer}/.well-known/openid-configuration").json()
    verifier, challenge = pkce()
    query = {
        "client_id": CLIENT_ID,
        "redirect_uri": redirect,
        "response_type": "code",
        "scope": "openid",
        "state": secrets.token_urlsafe(8),
        "nonce": secrets.token_urlsafe(8),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    chosen = httpx.post(found["authorization_endpoint"], params=query, data={"sub": sub})
    code = parse_qs(urlsplit(chosen.headers["location"]).query)["code"][0]
    answer = httpx.post(
        found["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
            "client_id": CLIENT_ID,
            "client_secret": "unused",
        },
    )
    answer.raise_for_status()
    token: str = answer.json()["id_token"]
    return token
