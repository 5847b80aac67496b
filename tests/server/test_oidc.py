"""Sign-in through an OpenID Connect provider: a real one on loopback (oidc-provider-mock),
found by discovery; its tokens are bearer tokens for the API and /mcp, verified with the keys
of its JWKS URL, and its claims mapped as any token's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from bastion.server.loading import ServerFile, opened_app

from .oidc_support import CLIENT_ID, id_token, provider
from .reload_support import McpSession, rewrite
from .support import running

USERS = {
    "ana": {"tenant": "acme", "roles": ["analyst"], "clearance": "internal"},
    "bo": {"tenant": "acme", "roles": [], "clearance": "internal"},
}


def _file(folder: Path, issuer: str) -> Path:
    path = folder / "bastion.toml"
    rewrite(
        path,
        f"""
[[mounts]]
prefix = "/docs"
url = "sqlite:docs.db"
labels = {{ tenant = "acme", classification = "internal" }}

[[policy.rules]]
effect = "allow"
actions = ["read", "list", "search", "write"]
paths = ["/**"]
roles = ["analyst"]

[identity]
issuer = "{issuer}"
audience = "{CLIENT_ID}"
discovery = true
""",
    )
    return path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with provider(USERS) as issuer:
        config = _file(tmp_path, issuer)
        with opened_app(ServerFile.read(config)) as app, running(app) as url:
            yield issuer, url


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_of_the_provider_is_a_bearer_token_for_the_api_and_mcp(
    served: tuple[str, str],
) -> None:
    issuer, url = served
    ana = id_token(issuer, "ana")
    with httpx.Client(base_url=url, timeout=30) as client:
        wrote = client.post(
            "/v1/files/write",
            json={"path": "/docs/a.md", "content": "# A\n\nThe avocet.\n"},
            headers=_bearer(ana),
        )
        assert wrote.status_code == 201, wrote.text
        me = client.get("/v1/me", headers=_bearer(ana)).json()
        assert (me["id"], me["tenant"], me["roles"]) == ("ana", "acme", ["analyst"])
        status, output = McpSession(client, ana).open().read("/docs/a.md")
        assert status == 200 and output is not None and "avocet" in output["content"]
        bo = id_token(issuer, "bo")
        assert (
            client.get(
                "/v1/files/read", params={"path": "/docs/a.md"}, headers=_bearer(bo)
            ).status_code
            == 404
        )


def test_a_token_signed_by_another_key_is_refused(served: tuple[str, str]) -> None:
    issuer, url = served
    forged_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    claims = jwt.decode(id_token(issuer, "ana"), options={"verify_signature": False})
    for kid in (None, "made-up"):
        headers = {"kid": kid} if kid else {}
        forged = jwt.encode(claims, forged_key, algorithm="RS256", headers=headers)
        r = httpx.get(f"{url}/v1/me", headers=_bearer(forged))
        assert r.status_code == 401
    hmac = jwt.encode(claims, "x" * 64, algorithm="HS256")
    assert httpx.get(f"{url}/v1/me", headers=_bearer(hmac)).status_code == 401
