"""Every endpoint answers in the shape its operation declares (``Operation.result``, whose
models refuse any field they do not name), so the OpenAPI document generated from the
declarations describes what the server really sends."""

from __future__ import annotations

import time

import httpx

from bastion.server.openapi import all_endpoints

from .support import Token, auth

_JOURNAL = ("/v1/changes", "/v1/checkpoints")
_OVERLAY = "/v1/overlay/"
"""This server has no overlay mount: tests/server/test_api_overlay.py answers them."""


def test_every_endpoint_answers_in_its_declared_shape(client: httpx.Client, token: Token) -> None:
    h = auth(token("olga", roles=("ops",)))
    d = "/docs/declared"
    calls: list[tuple[str, str, httpx.Response]] = []

    def get(route: str, /, **params: object) -> None:
        calls.append(("GET", route, client.get(route, params=params, headers=h)))

    def post(route: str, /, **body: object) -> None:
        calls.append(("POST", route, client.post(route, json=body, headers=h)))

    post("/v1/files/mkdir", path=d)
    post("/v1/files/write", path=f"{d}/a.md", content="# A\n\nThe plover nests here.\n")
    post("/v1/files/edit", path=f"{d}/a.md", old="plover", new="dotterel")
    post("/v1/files/copy", src=f"{d}/a.md", dst=f"{d}/b.md")
    post("/v1/files/move", src=f"{d}/b.md", dst=f"{d}/c.md")
    get("/v1/files", path=d, recursive="true")
    get("/v1/files/stat", path=f"{d}/a.md")
    get("/v1/files/read", path=f"{d}/a.md", offset=1, limit=2)
    get("/v1/files/glob", pattern="**/*.md", path=d)
    get("/v1/files/grep", pattern="dotterel", path=d, context=1)
    get("/v1/search", query="dotterel", mode="bm25", k=3)
    post("/v1/search", query="dotterel", mode="bm25", filter={})
    post("/v1/ask", question="Where does the dotterel nest?", mode="bm25")
    chat = client.post("/v1/chat", json={"question": "Where does the dotterel nest?"}, headers=h)
    calls.append(("POST", "/v1/chat", chat))
    talk = chat.json()["conversation"]
    get("/v1/conversations")
    get("/v1/conversations/read", conversation=talk)
    post("/v1/feedback", conversation=talk, turn=0, rating="missing", note="the nest's place")
    post("/v1/conversations/delete", conversation=talk)
    calls.append(
        (
            "POST",
            "/v1/ingest",
            client.post(
                "/v1/ingest",
                data={"path": d, "overwrite": "true"},
                files={"file": ("up.md", b"# Up\n\nuploaded\n")},
                headers=h,
            ),
        )
    )
    get("/v1/index/status")
    post("/v1/index/repair")
    deadline = time.monotonic() + 30
    while client.get("/v1/index/status", headers=h).json()["job"]["running"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    get("/v1/audit", limit=5)
    get("/v1/me")
    get("/healthz")
    get("/readyz")
    post("/v1/files/delete", path=d, recursive=True)

    by_route = {(e.method, e.path): e for e in all_endpoints()}
    for method, path, response in calls:
        assert response.status_code < 300, (path, response.text)
        e = by_route[(method, path)]
        assert response.status_code == e.status, path
        e.operation.result.model_validate(response.json())
    untried = set(by_route) - {(m, p) for m, p, _ in calls}
    # the change journal's routes: this server keeps no journal (tests/server/test_api_changes.py)
    untried -= {(e.method, e.path) for e in all_endpoints() if e.path.startswith(_JOURNAL)}
    untried -= {(e.method, e.path) for e in all_endpoints() if e.path.startswith(_OVERLAY)}
    # the demo login is off on this server (tests/server/test_api_bodies_and_claims.py signs in);
    # accounts and OpenID Connect need a workspace file (test_accounts.py, test_oidc.py);
    # /metrics answers text (test_metrics.py)
    assert untried == {
        ("GET", "/v1/auth/demo/users"),
        ("POST", "/v1/auth/demo"),
        ("POST", "/v1/auth/login"),
        ("POST", "/v1/auth/logout"),
        ("GET", "/v1/auth/methods"),
        ("GET", "/metrics"),
        ("GET", "/v1/auth/oidc/start"),
        ("GET", "/v1/auth/oidc/callback"),
        # names a user of a workspace file or the demo (tests/web/test_admin_explain.py)
        ("GET", "/v1/explain"),
    }
