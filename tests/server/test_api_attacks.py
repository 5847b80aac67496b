"""The attack classes of the security suites, replayed through HTTP: paths, tokens, labels,
hidden against missing, tenants, limits, headers."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import jwt
import pytest

from .conftest import AUDIENCE, ISSUER
from .support import Token, auth

# -- tokens ------------------------------------------------------------------------------------


def _none_token() -> str:
    return jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": 2**31}, None, algorithm="none"
    )


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({}, "no credentials"),
        ({"Authorization": "Basic YWxpY2U6cHc="}, "not a bearer token"),
        ({"Authorization": "Bearer"}, "not a bearer token"),
        ({"Authorization": "Bearer not.a.jwt"}, "not a well-formed JWT"),
        ({"Authorization": "Bearer " + "a" * 10_000}, "longer than"),
        ({"Authorization": "Bearer " + _none_token()}, "'none' is not allowed"),
    ],
)
def test_missing_and_malformed_tokens_are_401(
    client: httpx.Client, headers: dict[str, str], why: str
) -> None:
    r = client.get("/v1/files", headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")
    body = r.json()
    assert body["error"]["code"] == "unauthenticated"
    assert why in body["error"]["message"]
    assert "\n" not in body["error"]["message"] and "Traceback" not in r.text


def test_refused_tokens_say_why_in_one_line(client: httpx.Client, token: Token) -> None:
    cases = {
        "expired": token(ttl=-3600),
        "audience": token(aud="another-service"),
        "issuer": token(iss="https://evil.test"),
        "signature": token()[:-4] + "AAAA",
        "not valid yet": token(nbf=int(time.time()) + 3600),
    }
    for why, bad in cases.items():
        r = client.get("/v1/me", headers=auth(bad))
        assert r.status_code == 401, why
        message = r.json()["error"]["message"]
        assert why in message, (why, message)
        assert bad not in r.text and "Traceback" not in r.text


def test_a_token_signed_with_another_secret_is_refused(client: httpx.Client) -> None:
    forged = jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "root", "roles": ["ops"], "exp": 2**31},
        "x" * 64,
        algorithm="HS256",
        headers={"kid": "k1"},
    )
    assert client.get("/v1/audit", headers=auth(forged)).status_code == 401


def test_the_demo_login_is_off_unless_configured(client: httpx.Client) -> None:
    assert client.post("/v1/auth/demo", json={"user": "ana"}).status_code == 404
    demo_kid = jwt.encode(
        {"sub": "ana", "exp": 2**31},
        "x" * 64,
        algorithm="HS256",
        headers={"kid": "bastion-demo-login"},
    )
    assert client.get("/v1/me", headers=auth(demo_kid)).status_code == 401


# -- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/docs/../../etc/passwd",
        "/../etc/passwd",
        "/docs/%2e%2e/%2e%2e/etc/passwd",
        "/docs/a\x00b",
        "C:\\Windows\\win.ini",
        "/docs/" + "a/" * 2000,
        "/etc/passwd",
        "../../etc/passwd",
    ],
)
def test_path_attacks_never_reach_a_file_outside(
    client: httpx.Client, token: Token, path: str
) -> None:
    r = client.get("/v1/files/read", params={"path": path}, headers=auth(token()))
    assert r.status_code in (400, 404)
    assert r.json()["error"]["code"] in ("invalid_path", "not_found")
    assert "root:" not in r.text and "Traceback" not in r.text


# -- labels: hidden is missing -------------------------------------------------------------------


def _same(
    hidden: httpx.Response, missing: httpx.Response, hidden_path: str, missing_path: str
) -> None:
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == {
        "error": {
            "code": missing.json()["error"]["code"],
            "message": missing.json()["error"]["message"].replace(missing_path, hidden_path),
        }
    }
    skip = {"date", "content-length"}
    assert {k: v for k, v in hidden.headers.items() if k not in skip} == {
        k: v for k, v in missing.headers.items() if k not in skip
    }


@pytest.mark.parametrize(
    ("method", "url", "field"),
    [
        ("GET", "/v1/files/read", "path"),
        ("GET", "/v1/files/stat", "path"),
        ("GET", "/v1/files", "path"),
        ("POST", "/v1/files/edit", "path"),
        ("POST", "/v1/files/copy", "src"),
        ("POST", "/v1/files/move", "src"),
        ("POST", "/v1/files/delete", "path"),
    ],
)
def test_a_hidden_file_answers_exactly_like_a_missing_one(
    client: httpx.Client, token: Token, method: str, url: str, field: str
) -> None:
    h = auth(token())
    hidden_path, missing_path = "/docs/hr/pay.md", "/docs/hr/poy.md"

    def call(path: str) -> httpx.Response:
        if method == "GET":
            return client.get(url, params={field: path}, headers=h)
        extra = {
            "/v1/files/edit": {"old": "a", "new": "b"},
            "/v1/files/copy": {"dst": "/docs/copied.md"},
            "/v1/files/move": {"dst": "/docs/copied.md"},
        }  # each endpoint takes its own fields only
        return client.post(url, json={field: path, **extra.get(url, {})}, headers=h)

    _same(call(hidden_path), call(missing_path), hidden_path, missing_path)


def test_a_hidden_mount_answers_like_no_mount(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    hidden = client.get("/v1/files", params={"path": "/secret"}, headers=h)
    missing = client.get("/v1/files", params={"path": "/secrex"}, headers=h)
    _same(hidden, missing, "/secret", "/secrex")


def test_search_and_ask_never_use_a_hidden_document(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    hits = client.get(
        "/v1/search", params={"query": "kestrel bonus percent", "mode": "bm25"}, headers=h
    ).json()
    assert [hit["path"] for hit in hits["hits"]] == ["/docs/handbook.md"]
    answer = client.post(
        "/v1/ask", json={"question": "What is the kestrel bonus?", "mode": "bm25"}, headers=h
    )
    assert "12 percent" not in answer.text and "/docs/hr" not in answer.text
    hr = auth(token("mei", roles=("hr",), clearance="confidential"))
    answer = client.post(
        "/v1/ask", json={"question": "What is the kestrel bonus?", "mode": "bm25"}, headers=hr
    )
    assert "12 percent" in answer.json()["answer"]
    assert answer.json()["citations"][0]["path"] == "/docs/hr/pay.md"


def test_another_tenant_never_sees_a_tenant_document(client: httpx.Client, token: Token) -> None:
    other = auth(token("eve", tenant="globex", clearance="restricted", roles=("hr",)))
    listed = client.get("/v1/files", params={"path": "/docs", "recursive": "true"}, headers=other)
    paths = {e["path"] for e in listed.json()["entries"]}
    assert "/docs/handbook.md" in paths and "/docs/hr/pay.md" not in paths
    read = client.get("/v1/files/read", params={"path": "/docs/hr/pay.md"}, headers=other)
    assert read.status_code == 404
    hits = client.get(
        "/v1/search", params={"query": "kestrel bonus", "mode": "bm25"}, headers=other
    )
    assert "/docs/hr/pay.md" not in hits.text


# -- operators, headers, CORS ------------------------------------------------------------------


def test_audit_is_for_operators(client: httpx.Client, token: Token) -> None:
    assert client.get("/v1/audit", headers=auth(token())).status_code == 403
    ops = client.get("/v1/audit", params={"limit": 5}, headers=auth(token("olga", roles=("ops",))))
    assert ops.status_code == 200
    assert all(
        set(r) >= {"principal", "operation", "path", "allowed"} for r in ops.json()["records"]
    )


def test_security_headers_and_no_cors_by_default(client: httpx.Client, token: Token) -> None:
    r = client.get("/v1/me", headers={**auth(token()), "Origin": "https://evil.test"})
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["cache-control"] == "no-store"
    assert "access-control-allow-origin" not in r.headers
    pre = client.options(
        "/v1/me",
        headers={"Origin": "https://evil.test", "Access-Control-Request-Method": "GET"},
    )
    assert "access-control-allow-origin" not in pre.headers


def test_an_upload_over_the_limit_is_cut_while_it_streams(
    client: httpx.Client, token: Token
) -> None:
    def body():  # chunked: no Content-Length to refuse up front
        boundary = b"--xyz\r\n"
        yield boundary + b'Content-Disposition: form-data; name="path"\r\n\r\n/docs\r\n'
        yield boundary + b'Content-Disposition: form-data; name="file"; filename="big.md"\r\n\r\n'
        for _ in range(100):
            yield b"y" * 1024
        yield b"\r\n--xyz--\r\n"

    r = client.post(
        "/v1/ingest",
        content=body(),
        headers={**auth(token()), "Content-Type": "multipart/form-data; boundary=xyz"},
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
    assert (
        client.get(
            "/v1/files/stat", params={"path": "/docs/big.md"}, headers=auth(token())
        ).status_code
        == 404
    )


def test_no_response_shows_a_store_path(
    client: httpx.Client, token: Token, served_root: Path
) -> None:
    h = auth(token())
    responses = [
        client.get("/v1/files/read", params={"path": "/docs/escape.md"}, headers=h),
        client.get("/v1/files/stat", params={"path": "/docs/escape.md"}, headers=h),
        client.get("/v1/files/read", params={"path": "/docs/fifo/pipe.md"}, headers=h),
        client.post("/v1/files/write", json={"path": "/docs/escape.md", "content": "x"}, headers=h),
        client.post(
            "/v1/files/move", json={"src": "/docs/escape.md", "dst": "/docs/e2.md"}, headers=h
        ),
        client.get("/v1/files/grep", params={"pattern": "x", "path": "/docs"}, headers=h),
        client.get("/v1/files", params={"path": "/docs", "recursive": "true"}, headers=h),
        client.post("/v1/files/mkdir", json={"path": "/docs/handbook.md/sub"}, headers=h),
        client.get("/readyz"),
    ]
    for r in responses:
        assert str(served_root) not in r.text, r.text
        assert "/etc/hostname" not in r.text and "Traceback" not in r.text
    assert responses[0].status_code in (404, 422)
