"""The file endpoints over real HTTP, for the principal of each request's token."""

from __future__ import annotations

import httpx

from .support import Token, auth


def test_list_shows_only_what_the_principal_may_see(client: httpx.Client, token: Token) -> None:
    staff = client.get(
        "/v1/files", params={"path": "/", "recursive": "true"}, headers=auth(token())
    )
    assert staff.status_code == 200
    paths = {e["path"] for e in staff.json()["entries"]}
    assert "/docs/handbook.md" in paths and "/docs/notes/plan.md" in paths
    assert "/docs/hr/pay.md" not in paths
    assert not any(p.startswith("/secret") for p in paths)
    hr = client.get(
        "/v1/files",
        params={"path": "/docs/hr"},
        headers=auth(token("mei", roles=("hr",), clearance="confidential")),
    )
    assert [e["path"] for e in hr.json()["entries"]] == ["/docs/hr/pay.md"]


def test_read_lines_and_bytes(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    lines = client.get(
        "/v1/files/read", params={"path": "/docs/notes/plan.md", "offset": 1, "limit": 2}, headers=h
    )
    assert lines.json() == {
        "path": "/docs/notes/plan.md",
        "offset": 1,
        "content": "line 2\nline 3\n",
    }
    raw = client.get(
        "/v1/files/read", params={"path": "/docs/notes/plan.md", "start": 7, "end": 13}, headers=h
    )
    assert raw.headers["content-type"] == "application/octet-stream"
    assert raw.content == b"line 2"


def test_write_with_expected_version_edit_move_copy_delete(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("raj"))
    made = client.post(
        "/v1/files/write", json={"path": "/docs/w/a.md", "content": "alpha\n"}, headers=h
    )
    assert made.status_code == 201
    version = made.json()["version"]
    again = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/a.md", "content": "beta\n", "if_version": version},
        headers=h,
    )
    assert again.status_code == 201
    stale = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/a.md", "content": "gamma\n", "if_version": version},
        headers=h,
    )
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "conflict"
    exists = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/a.md", "content": "x", "mode": "create"},
        headers=h,
    )
    assert exists.status_code == 409 and exists.json()["error"]["code"] == "already_exists"
    edited = client.post(
        "/v1/files/edit", json={"path": "/docs/w/a.md", "old": "beta", "new": "delta"}, headers=h
    )
    assert edited.json()["replacements"] == 1
    missing = client.post(
        "/v1/files/edit", json={"path": "/docs/w/a.md", "old": "nope", "new": "x"}, headers=h
    )
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "edit_failed"
    assert (
        client.post(
            "/v1/files/copy", json={"src": "/docs/w/a.md", "dst": "/docs/w/b.md"}, headers=h
        ).status_code
        == 201
    )
    assert (
        client.post(
            "/v1/files/move", json={"src": "/docs/w/b.md", "dst": "/docs/w/c.md"}, headers=h
        ).status_code
        == 200
    )
    stat = client.get("/v1/files/stat", params={"path": "/docs/w/c.md"}, headers=h).json()
    assert stat["kind"] == "file" and stat["size"] == len("delta\n")
    assert (
        client.post("/v1/files/mkdir", json={"path": "/docs/w/sub"}, headers=h).status_code == 201
    )
    globbed = client.get(
        "/v1/files/glob", params={"pattern": "**/*.md", "path": "/docs/w"}, headers=h
    ).json()
    assert {e["path"] for e in globbed["entries"]} == {"/docs/w/a.md", "/docs/w/c.md"}
    assert (
        client.post(
            "/v1/files/delete", json={"path": "/docs/w", "recursive": True}, headers=h
        ).status_code
        == 200
    )
    gone = client.get("/v1/files/stat", params={"path": "/docs/w/a.md"}, headers=h)
    assert gone.status_code == 404


def test_grep_never_shows_a_hidden_line(client: httpx.Client, token: Token) -> None:
    found = client.get(
        "/v1/files/grep", params={"pattern": "kestrel", "path": "/"}, headers=auth(token())
    )
    assert found.status_code == 200
    assert [(m["path"], m["line"]) for m in found.json()["matches"]] == [("/docs/handbook.md", 3)]
    assert "bonus" not in found.text


def test_scope_and_policy_refusals_are_403(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    scope = client.post("/v1/files/write", json={"path": "/ref/a.md", "content": "x"}, headers=h)
    assert scope.status_code == 403 and scope.json()["error"]["code"] == "scope_denied"
    policy = client.post(
        "/v1/files/write", json={"path": "/docs/locked/a.md", "content": "x"}, headers=h
    )
    assert policy.status_code == 403 and policy.json()["error"]["code"] == "policy_denied"


def test_limits_are_413(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    big = client.post(
        "/v1/files/write", json={"path": "/docs/big.md", "content": "x" * 40_000}, headers=h
    )
    assert big.status_code == 413 and big.json()["error"]["code"] == "body_too_large"
    blocked = client.post(
        "/v1/files/write", json={"path": "/docs/.git/config", "content": "x"}, headers=h
    )
    assert blocked.status_code == 413 and blocked.json()["error"]["code"] == "limit_exceeded"


def test_bad_requests_are_400_with_a_code(client: httpx.Client, token: Token) -> None:
    h = auth(token())
    assert client.get("/v1/files/read", headers=h).json()["error"]["code"] == "missing_field"
    json_type = {"Content-Type": "application/json"}
    bad = client.post("/v1/files/write", content=b"{not json", headers=h | json_type)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_json"
    pattern = client.get("/v1/files/grep", params={"pattern": "(", "regex": "true"}, headers=h)
    assert pattern.status_code == 400 and pattern.json()["error"]["code"] == "invalid_pattern"
    offset = client.get(
        "/v1/files/read", params={"path": "/docs/handbook.md", "offset": "-1"}, headers=h
    )
    assert offset.status_code == 400 and offset.json()["error"]["code"] == "bad_field"
