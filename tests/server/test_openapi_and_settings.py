"""The OpenAPI document covers the routes; settings, the public-bind guard, rate limits."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.routing import Route

from bastion.core.errors import ConfigurationError
from bastion.server import ServerSettings, create_app
from bastion.server.loading import ServerFile, opened_app

from .conftest import build_workspace
from .support import auth, running


def test_openapi_lists_every_api_route(client: httpx.Client, tmp_path: Path) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    app = create_app(build_workspace(tmp_path))
    served = {
        (r.path, m.lower())
        for r in app.routes
        if isinstance(r, Route) and r.path.startswith(("/v1", "/healthz", "/readyz", "/metrics"))
        for m in (r.methods or ()) - {"HEAD"}
    }
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert documented == served


def test_health_and_readiness_need_no_token(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready", "index": True}


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_a_public_address_without_identity_is_refused(host: str) -> None:
    with pytest.raises(ConfigurationError, match=r"add an \[identity\] table"):
        ServerSettings(host=host).check_bind(authenticated=False)
    ServerSettings(host=host).check_bind(authenticated=True)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_identity(host: str) -> None:
    ServerSettings(host=host).check_bind(authenticated=False)
    ServerSettings(host=host, demo_login=True).check_bind(authenticated=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_the_demo_login_is_refused_on_a_public_address_even_with_identity(host: str) -> None:
    for authenticated in (False, True):
        with pytest.raises(ConfigurationError, match="demo_login on: anyone who can reach"):
            ServerSettings(host=host, demo_login=True).check_bind(authenticated=authenticated)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"cors_origins": ["*"]}, "may not be"),
        ({"port": 70000}, "port must be"),
        ({"max_body_bytes": 0}, "max_body_bytes must be"),
        ({"demo_login": "yes"}, "demo_login must be"),
        ({"colour": "blue"}, "unknown keys"),
    ],
)
def test_server_table_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ServerSettings.from_dict(table)


def test_a_workspace_file_with_server_tables(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe heron nests here.\n")
    (tmp_path / "bastion.toml").write_text(
        """
[[mounts]]
prefix = "/docs"
url = "file:docs"

[policy]
rules = [{ effect = "allow", actions = ["read", "list", "search"], paths = ["/**"] }]

[knowledge]
folder = "index"
embedder = "none"

[server]
host = "127.0.0.2"
demo_login = true
requests_per_minute = 3

[identity]
issuer = "https://id.test"
audience = "bastion"
keys = [{ algorithm = "HS256", secret_env = "ID_SECRET", kid = "k1" }]
"""
    )
    loaded = ServerFile.read(tmp_path / "bastion.toml", env={"ID_SECRET": "s" * 40})
    assert loaded.settings.host == "127.0.0.2" and loaded.identity is not None
    with opened_app(loaded) as app, running(app) as url, httpx.Client(base_url=url) as c:
        token = c.post("/v1/auth/demo", json={"user": "ana"}).json()["token"]
        hits = c.get("/v1/search", params={"query": "heron", "mode": "bm25"}, headers=auth(token))
        assert hits.json()["hits"][0]["path"] == "/docs/a.md"
        statuses = [c.get("/v1/me", headers=auth(token)).status_code for _ in range(3)]
        assert statuses[-1] == 429
        limited = c.get("/v1/me", headers=auth(token))
        assert (
            limited.json()["error"]["code"] == "rate_limited" and "retry-after" in limited.headers
        )


def test_the_file_refuses_a_public_bind_without_identity(tmp_path: Path) -> None:
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/m"\nurl = "memory://"\n[policy]\nrules = []\n[server]\nhost = "0.0.0.0"\n'
    )
    loaded = ServerFile.read(tmp_path / "bastion.toml")
    with (
        pytest.raises(ConfigurationError, match=r"refusing to listen on 0\.0\.0\.0"),
        opened_app(loaded),
    ):
        pass
