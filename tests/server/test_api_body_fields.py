"""A request's field names are the endpoint's own: each endpoint takes exactly the parameters
of the operation it serves (``bastion.workspace.operations``), and refuses any other name
before anything happens (a misspelt ``if_version`` ignored would make a conditional write a
blind one, and lose the update it was guarding; another endpoint's field is no better)."""

from __future__ import annotations

import httpx
import pytest

from bastion.server.openapi import all_endpoints

from .support import Token, auth


def test_a_misspelt_condition_is_refused_and_the_file_is_left_alone(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("raj"))
    made = client.post(
        "/v1/files/write", json={"path": "/docs/w/f.md", "content": "one\n"}, headers=h
    )
    assert made.status_code == 201
    stale = made.json()["version"]
    client.post("/v1/files/write", json={"path": "/docs/w/f.md", "content": "two\n"}, headers=h)
    typo = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/f.md", "content": "three\n", "if_versoin": stale},
        headers=h,
    )
    assert typo.status_code == 400
    error = typo.json()["error"]
    assert error["code"] == "unknown_field"
    assert "'if_versoin'" in error["message"] and "if_version" in error["message"]
    read = client.get("/v1/files/read", params={"path": "/docs/w/f.md"}, headers=h)
    assert read.json()["content"] == "two\n"


def test_another_endpoints_field_is_refused_and_nothing_happens(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("raj"))
    # a mkdir body carrying a write's fields: refused, and no directory is made
    shared = {"path": "/docs/w/made", "content": "x", "if_version": "v", "parents": True}
    r = client.post("/v1/files/mkdir", json=shared, headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_field"
    assert "'content'" in r.json()["error"]["message"]
    gone = client.get("/v1/files/stat", params={"path": "/docs/w/made"}, headers=h)
    assert gone.status_code == 404
    # a delete with an edit's fields deletes nothing
    client.post("/v1/files/write", json={"path": "/docs/w/keep.md", "content": "k"}, headers=h)
    r = client.post(
        "/v1/files/delete", json={"path": "/docs/w/keep.md", "old": "a", "new": "b"}, headers=h
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_field"
    kept = client.get("/v1/files/read", params={"path": "/docs/w/keep.md"}, headers=h)
    assert kept.json()["content"] == "k"


def test_a_misspelt_query_parameter_is_refused(client: httpx.Client, token: Token) -> None:
    h = auth(token("raj"))
    r = client.get("/v1/files/grep", params={"pattern": "kestrel", "ignorecase": "true"}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_field"
    assert "ignore_case" in r.json()["error"]["message"]
    # an object belongs in the body: GET /v1/search takes no filter
    r = client.get("/v1/search", params={"query": "kestrel", "filter": "x"}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_field"


@pytest.mark.parametrize("e", all_endpoints(), ids=lambda e: f"{e.method} {e.path}")
def test_every_endpoint_refuses_a_name_it_does_not_take(
    client: httpx.Client, token: Token, e: object
) -> None:
    from bastion.server.handlers import Endpoint

    assert isinstance(e, Endpoint)
    if e.source == "form":
        files = {"file": ("a.md", b"x")}
        r = client.post(
            e.path, data={"path": "/docs/w", "bogus": "1"}, files=files, headers=auth(token())
        )
    elif e.method == "GET":
        r = client.get(e.path, params={"bogus": "1"}, headers=auth(token()))
    else:
        r = client.post(e.path, json={"bogus": 1}, headers=auth(token()))
    if e.path == "/v1/auth/demo/users" or e.path == "/v1/auth/demo":
        # the demo login is off on this server: the parameters are read first all the same
        assert r.status_code == 400, r.text
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "unknown_field" and "'bogus'" in error["message"]


@pytest.mark.parametrize(
    ("method", "url", "fields", "name"),
    [
        ("GET", "/v1/search", {"query": "x", "k": "0"}, "'k'"),
        ("GET", "/v1/search", {"query": "x", "k": "101"}, "'k'"),
        ("POST", "/v1/search", {"query": "x", "k": True}, "'k'"),
        ("POST", "/v1/ask", {"question": "x" * 4001}, "'question'"),
        ("POST", "/v1/ask", {"question": "why", "budget_tokens": 10**6}, "'budget_tokens'"),
        ("GET", "/v1/files/grep", {"pattern": "x", "context": "21"}, "'context'"),
        ("GET", "/v1/files", {"depth": "0"}, "'depth'"),
        ("GET", "/v1/files/read", {"path": "/docs/handbook.md", "limit": "5001"}, "'limit'"),
        ("GET", "/v1/audit", {"limit": "1001"}, "'limit'"),
        ("POST", "/v1/files/write", {"path": "/docs/w/m.md", "content": "x", "mode": "x"}, "mode"),
        ("POST", "/v1/files/write", {"path": "/docs/w/m.md", "content": 5}, "'content'"),
    ],
)
def test_declared_bounds_and_types_are_a_400_bad_field(
    client: httpx.Client, token: Token, method: str, url: str, fields: dict[str, object], name: str
) -> None:
    h = auth(token("olga", roles=("ops",)))
    if method == "GET":
        r = client.get(url, params=fields, headers=h)
    else:
        r = client.post(url, json=fields, headers=h)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "bad_field" and name in error["message"]
    assert "\n" not in error["message"]


def test_a_missing_field_is_named(client: httpx.Client, token: Token) -> None:
    r = client.post("/v1/files/edit", json={"path": "/docs/w/x.md"}, headers=auth(token()))
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_field"
    assert "'old'" in r.json()["error"]["message"]


def test_a_long_or_odd_field_name_is_cut_and_quoted_in_one_line(
    client: httpx.Client, token: Token
) -> None:
    r = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/y.md", "content": "x", "a\nb" + "z" * 500: 1},
        headers=auth(token("raj")),
    )
    message = r.json()["error"]["message"]
    assert r.status_code == 400 and "\n" not in message and "z" * 100 not in message


def test_an_upload_under_another_name_is_refused_not_ignored(
    client: httpx.Client, token: Token
) -> None:
    r = client.post(
        "/v1/ingest",
        data={"path": "/docs/w"},
        files={"file": ("a.md", b"a"), "files": ("b.md", b"b")},
        headers=auth(token("raj")),
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_field"
    assert "'files'" in r.json()["error"]["message"]
    gone = client.get("/v1/files/stat", params={"path": "/docs/w/a.md"}, headers=auth(token()))
    assert gone.status_code == 404
