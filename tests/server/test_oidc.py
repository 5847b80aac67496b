"""Sign-in through an OpenID Connect provider: a real one on loopback (oidc-provider-mock),
found by discovery; its tokens are bearer tokens for the API and /mcp, verified with the keys
of its JWKS URL, and its claims mapped as any token's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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
client_id = "{CLIENT_ID}"
client_secret_env = "OIDC_CLIENT_SECRET"
""",
    )
    return path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with provider(USERS) as issuer:
        config = _file(tmp_path, issuer)
        # a confidential client: the provider authenticates it at its token endpoint
        env = {"OIDC_CLIENT_SECRET": "the-client-secret"}
        with opened_app(ServerFile.read(config, env=env)) as app, running(app) as url:
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


def _page_sign_in(url: str, sub: str) -> httpx.Client:
    """What the browser does: start at the server, choose ``sub`` at the provider, follow the
    redirect back; the client then holds the session cookie."""
    client = httpx.Client(base_url=url, timeout=30)
    started = client.get("/v1/auth/oidc/start")
    assert started.status_code == 302, started.text
    where = started.headers["location"]
    query = parse_qs(urlsplit(where).query)
    assert query["code_challenge_method"] == ["S256"] and query["response_type"] == ["code"]
    flow = started.headers["set-cookie"].lower()
    assert "httponly" in flow and "samesite=lax" in flow and "path=/v1/auth/oidc" in flow
    chosen = httpx.post(where, data={"sub": sub})
    back = chosen.headers["location"]
    assert back.startswith(f"{url}/v1/auth/oidc/callback?")
    landed = client.get(back.removeprefix(url))
    assert landed.status_code == 302 and landed.headers["location"] == "/", landed.text
    session = landed.headers["set-cookie"].lower()
    assert "bastion_session=" in session and "httponly" in session and "samesite=strict" in session
    return client


def test_the_page_signs_in_with_the_code_flow_and_pkce(served: tuple[str, str]) -> None:
    _, url = served
    assert httpx.get(f"{url}/v1/auth/methods").json() == {"accounts": True, "oidc": True}
    client = _page_sign_in(url, "ana")
    try:
        me = client.get("/v1/me").json()
        assert (me["id"], me["roles"]) == ("ana", ["analyst"])
        wrote = client.post(
            "/v1/files/write", json={"path": "/docs/p.md", "content": "x"}, headers={"Origin": url}
        )
        assert wrote.status_code == 201, wrote.text
        assert (
            client.post("/v1/files/write", json={"path": "/docs/q.md", "content": "x"}).status_code
            == 401
        )
    finally:
        client.close()


def test_a_callback_not_started_here_is_refused(served: tuple[str, str]) -> None:
    _, url = served
    with httpx.Client(base_url=url) as victim, httpx.Client(base_url=url) as attacker:
        started = attacker.get("/v1/auth/oidc/start")
        chosen = httpx.post(started.headers["location"], data={"sub": "ana"})
        back = chosen.headers["location"].removeprefix(url)
        # the attacker's code, pressed on a victim who never started a sign-in (login CSRF)
        refused = victim.get(back)
        assert refused.status_code == 400 and "bastion_session" not in refused.headers.get(
            "set-cookie", ""
        )
        # the victim started one of their own: the attacker's state is not theirs
        victim.get("/v1/auth/oidc/start")
        assert victim.get(back).status_code == 400
        # the attacker's own flow completes once: its flow cookie is spent with it
        assert attacker.get(back).status_code == 302
        assert attacker.get(back).status_code == 400
