"""Host and Origin on every endpoint (issue 23): DNS rebinding and other sites' pages.

A page on ``evil.example`` that makes its name resolve to ``127.0.0.1`` reaches the server as
``Host: evil.example``; the browser lets it read what comes back (the demo login's token, for
one). Every endpoint refuses it: the API, ``/mcp``, the page and its static files, health."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion.core.errors import ConfigurationError
from bastion.governance.identity import IdentityConfig
from bastion.server import ServerSettings
from bastion.server.demo import demo_app
from bastion.server.loading import ServerFile, opened_app
from bastion.server.origin import HostName, Origin

from .asgi import call
from .hostile import Served, served_app
from .support import Token, running

EVERY_ENDPOINT = [
    ("POST", "/v1/auth/demo"),
    ("GET", "/v1/auth/demo/users"),
    ("GET", "/v1/files"),
    ("POST", "/v1/files/write"),
    ("GET", "/v1/me"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("GET", "/"),
    ("GET", "/static/app.js"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/openapi.json"),
    ("OPTIONS", "/v1/files"),
    ("GET", "/no/such/page"),
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo server (demo login on) over real HTTP on loopback."""
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize(("method", "path"), EVERY_ENDPOINT)
def test_a_rebinding_host_name_is_refused_on_every_endpoint(
    demo: str, method: str, path: str
) -> None:
    with httpx.Client(base_url=demo, timeout=30) as c:
        r = c.request(
            method,
            path,
            headers={"Host": f"evil.example:{_port(demo)}", "Content-Type": "application/json"},
            content=b'{"user": "ana"}' if method == "POST" else None,
        )
    assert r.status_code == 421, r.text
    assert r.json()["error"]["code"] == "misdirected_request"
    assert "token" not in r.json() and "evil.example" not in r.text
    assert b"\n" not in r.content.strip()
    assert r.headers["x-frame-options"] == "DENY"  # refusals carry the security headers too


def test_the_demo_login_answers_its_own_names_and_no_other(demo: str) -> None:
    port = _port(demo)
    with httpx.Client(base_url=demo, timeout=30) as c:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "LOCALHOST."):
            r = c.post("/v1/auth/demo", json={"user": "ana"}, headers={"Host": host})
            assert r.status_code == 200 and r.json()["token"], host
        for host in (
            f"evil.example:{port}",
            f"localhost.evil.example:{port}",
            f"127.0.0.1.nip.io:{port}",
            f"evil.example@127.0.0.1:{port}",
            "127.0.0.1:notaport",
            f"127.0.0.1:{port}:1",
            "[::1",
            "",
        ):
            r = c.post("/v1/auth/demo", json={"user": "ana"}, headers={"Host": host})
            assert r.status_code in (400, 421), (host, r.status_code)
            assert "token" not in r.text, host


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://evil.example",
        "null",
        "http://127.0.0.1:1",  # another port on this machine is another site
        "http://localhost:{port}",  # another name for this machine is another origin
        "file://",
        "http://127.0.0.1:{port}/path",
        "garbage",
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/auth/demo"),
        ("GET", "/v1/auth/demo/users"),
        ("OPTIONS", "/v1/files"),
        ("GET", "/"),
    ],
)
def test_a_page_on_another_site_is_refused_whatever_the_method(
    demo: str, origin: str, method: str, path: str
) -> None:
    """GET too: a rule for every method leaves no method to slip through (a HEAD, an
    OPTIONS, a GET that costs a search), and no page of another site has a use for these."""
    with httpx.Client(base_url=demo, timeout=30) as c:
        r = c.request(
            method,
            path,
            headers={"Origin": origin.format(port=_port(demo))},
            json={"user": "ana"} if method == "POST" else None,
        )
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "forbidden_origin"
    assert "token" not in r.json()


def test_the_page_itself_may_call_its_server(demo: str) -> None:
    port = _port(demo)
    with httpx.Client(base_url=demo, timeout=30) as c:
        for origin in (f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}"):
            r = c.post("/v1/auth/demo", json={"user": "ana"}, headers={"Origin": origin})
            assert r.status_code == 200, origin
        r = c.post(
            "/v1/auth/demo",
            json={"user": "ana"},
            headers={"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
        )
        assert r.status_code == 200


def test_the_demo_login_behind_its_configured_name(tmp_path: Path) -> None:
    settings = ServerSettings(
        demo_login=True,
        allowed_hosts=("bastion.example.com", "10.0.0.5:8765"),
        allowed_origins=("https://app.example.com",),
    )
    with running(demo_app(tmp_path, settings=settings)) as url, httpx.Client(base_url=url) as c:

        def status(host: str, origin: str | None = None) -> int:
            headers = {"Host": host} | ({"Origin": origin} if origin else {})
            return c.post("/v1/auth/demo", json={"user": "ana"}, headers=headers).status_code

        assert status("bastion.example.com") == 200
        assert status("Bastion.Example.Com:443") == 200  # a name alone: any port
        assert status("10.0.0.5:8765") == 200
        assert status("10.0.0.5:8766") == 421  # a name with a port: that port only
        assert status("10.0.0.5") == 421
        assert status("www.bastion.example.com") == 421
        assert status("bastion.example.com.evil.example") == 421
        assert status("127.0.0.1:9") == 200  # loopback names stay allowed
        assert status("bastion.example.com", "https://bastion.example.com") == 200
        assert status("bastion.example.com:8443", "https://bastion.example.com:8443") == 200
        assert status("bastion.example.com", "https://app.example.com") == 200
        assert status("bastion.example.com", "https://app.example.com:444") == 403
        assert status("bastion.example.com", "https://evil.example") == 403


def test_cors_origins_are_let_in_and_answered(tmp_path: Path) -> None:
    settings = ServerSettings(demo_login=True, cors_origins=("https://app.example.com",))
    with running(demo_app(tmp_path, settings=settings)) as url, httpx.Client(base_url=url) as c:
        preflight = c.options(
            "/v1/auth/demo",
            headers={
                "Origin": "https://app.example.com",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example.com"
        other = c.options(
            "/v1/auth/demo",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert other.status_code == 403


def test_two_host_or_origin_headers_are_refused(served_in_process: Served) -> None:
    s = served_in_process
    two_hosts = s.call("GET", "/healthz", headers=[(b"host", b"localhost")])
    assert two_hosts.status == 421
    no_host = s.call("GET", "/healthz", host=b"")
    assert no_host.status == 421
    origin = (b"origin", b"http://127.0.0.1:8765")
    assert s.call("GET", "/healthz", headers=[origin]).status == 200
    assert s.call("GET", "/healthz", headers=[origin, origin]).status == 403


def test_mcp_with_a_valid_token_and_a_rebinding_host_is_refused(served_in_process: Served) -> None:
    s = served_in_process
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    )
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    refused = s.call("POST", "/mcp", headers=headers, chunks=[body], host=b"evil.example")
    assert refused.status == 421
    assert s.call("POST", "/mcp", headers=headers, chunks=[body]).status == 200


@pytest.fixture(scope="module")
def served_in_process(
    tmp_path_factory: pytest.TempPathFactory, identity: IdentityConfig, token: Token
) -> Iterator[Served]:
    with served_app(tmp_path_factory.mktemp("origin"), identity, token()) as s:
        yield s


# -- the names, parsed once ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("localhost", HostName("localhost")),
        ("LocalHost.:80", HostName("localhost", 80)),
        ("[::1]:8765", HostName("[::1]", 8765)),
        ("[0:0:0:0:0:0:0:1]", HostName("[::1]")),
        ("10.0.0.5:8765", HostName("10.0.0.5", 8765)),
        ("a_b.internal", HostName("a_b.internal")),
        ("evil.example@localhost", None),
        ("localhost:0", None),
        ("localhost:65536", None),
        ("localhost:", None),
        ("local host", None),
        ("[::1", None),
        ("[nonsense]", None),
        ("-a.example", None),
        ("a..example", None),
        ("", None),
        ("é.example", None),
    ],
)
def test_host_names(text: str, parsed: HostName | None) -> None:
    assert HostName.parse(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("http://a.example", Origin("http", HostName("a.example", 80))),
        ("https://A.example:443", Origin("https", HostName("a.example", 443))),
        ("http://[::1]:8765", Origin("http", HostName("[::1]", 8765))),
        ("null", None),
        ("ftp://a.example", None),
        ("http://a.example/x", None),
        ("http://u@a.example", None),
        ("http://a.example?x", None),
        ("*", None),
    ],
)
def test_origins(text: str, parsed: Origin | None) -> None:
    assert Origin.parse(text) == parsed


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"allowed_hosts": ["*"]}, '"\\*" is refused'),
        ({"allowed_hosts": "bastion.example.com"}, "must be a list"),
        ({"allowed_hosts": [1]}, "must be a list of strings"),
        ({"allowed_hosts": ["http://bastion.example.com"]}, "is not a host name"),
        ({"allowed_hosts": ["a b"]}, "is not a host name"),
        ({"allowed_origins": ["*"]}, "origins are written"),
        ({"allowed_origins": ["null"]}, "origins are written"),
        ({"allowed_origins": ["https://a.example/app"]}, "origins are written"),
        ({"allowed_origins": "https://a.example"}, "must be a list"),
        ({"cors_origins": ["a.example"]}, "origins are written"),
    ],
)
def test_bad_names_in_the_server_table_are_refused(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ServerSettings.from_dict(table)


def test_names_given_in_python_are_checked_too() -> None:
    with pytest.raises(ConfigurationError, match="is refused"):
        ServerSettings(allowed_hosts=("*",))
    assert ServerSettings(allowed_hosts=("::1",)).host_names() == (HostName("[::1]"),)


def test_the_workspace_file_names_the_hosts(tmp_path: Path) -> None:
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/m"\nurl = "memory://"\n[policy]\nrules = []\n'
        '[server]\ndemo_login = true\nallowed_hosts = ["bastion.example.com"]\n'
        'allowed_origins = ["https://app.example.com"]\n'
    )
    loaded = ServerFile.read(tmp_path / "bastion.toml")
    assert loaded.settings.allowed_hosts == ("bastion.example.com",)
    with opened_app(loaded) as app, running(app) as url, httpx.Client(base_url=url) as c:
        assert c.get("/healthz", headers={"Host": "bastion.example.com"}).status_code == 200
        assert c.get("/healthz", headers={"Host": "other.example.com"}).status_code == 421
        page = {"Host": "bastion.example.com", "Origin": "https://app.example.com"}
        assert c.get("/healthz", headers=page).status_code == 200


def test_the_in_process_driver_sends_what_it_is_given(served_in_process: Served) -> None:
    """The checks above are not vacuous: the driver really sends the Host it is given."""
    reply = served_in_process.portal.call(
        lambda: call(served_in_process.app, "GET", "/healthz", host=b"localhost:1")
    )
    assert reply.status == 200
