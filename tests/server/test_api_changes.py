"""The change journal over real HTTP: each principal sees only the changes it may read, undo
answers 409 (and changes nothing) when a file changed since, and a checkpoint restores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion import Labels, LocalStore, MemoryStore, Mount
from bastion.governance.identity import IdentityConfig
from bastion.server import create_app
from bastion.server.openapi import all_endpoints
from bastion.workspace import Workspace
from bastion.workspace.journal import Journal

from .conftest import policy
from .support import Token, auth, running


@pytest.fixture
def client(tmp_path: Path, identity: IdentityConfig) -> Iterator[httpx.Client]:
    (tmp_path / "docs").mkdir()
    mounts = [
        Mount.of("/docs", LocalStore(tmp_path / "docs"), "read_write", labels=Labels()),
        Mount.of(
            "/secret", MemoryStore(), "read_write", labels=Labels(classification="restricted")
        ),
    ]
    ws = Workspace(mounts, policy=policy(), journal=Journal(tmp_path / "journal.db"))
    with running(create_app(ws, identity=identity)) as url, httpx.Client(base_url=url) as c:
        yield c


def _write(client: httpx.Client, who: str, path: str, content: str) -> None:
    r = client.post("/v1/files/write", json={"path": path, "content": content}, headers=auth(who))
    assert r.status_code in (200, 201), r.text


def test_review_undo_and_restore_over_http(client: httpx.Client, token: Token) -> None:
    ana = token("ana")
    boss = token("boss", clearance="restricted")
    _write(client, ana, "/docs/a.md", "one\n")
    _write(client, ana, "/docs/a.md", "two\n")
    _write(client, boss, "/secret/s.md", "kestrel secret\n")
    seen = client.get("/v1/changes", headers=auth(ana)).json()["changes"]
    assert [e["path"] for c in seen for e in c["entries"]] == ["/docs/a.md", "/docs/a.md"]
    hidden = client.get("/v1/changes", headers=auth(boss)).json()["changes"][-1]["id"]
    for r in (
        client.get("/v1/changes/diff", params={"change": hidden}, headers=auth(ana)),
        client.post("/v1/changes/undo", json={"change": hidden}, headers=auth(ana)),
    ):
        assert r.status_code == 404 and "kestrel" not in r.text and "/secret" not in r.text
    diff = client.get("/v1/changes/diff", params={"change": seen[1]["id"]}, headers=auth(ana))
    assert "-one\n+two\n" in diff.json()["diff"]
    assert client.post("/v1/checkpoints", json={"name": "cp"}, headers=auth(ana)).status_code == 200
    bad = client.post("/v1/checkpoints", json={"name": "a\nb"}, headers=auth(ana))
    assert bad.status_code == 400
    _write(client, ana, "/docs/b.md", "b\n")
    _write(client, boss, "/docs/a.md", "three\n")  # someone else changed a.md since
    refused = client.post("/v1/changes/undo", json={"change": seen[1]["id"]}, headers=auth(ana))
    assert refused.status_code == 409
    done = client.post("/v1/checkpoints/restore", json={"checkpoint": "cp"}, headers=auth(ana))
    assert done.status_code == 200, done.text
    assert set(done.json()["removed"]) == {"/docs/b.md"}
    assert client.get("/v1/checkpoints", headers=auth(ana)).json()["checkpoints"][0]["name"] == "cp"
    _write(client, ana, "/docs/c.md", "c\n")
    last = client.post("/v1/changes/undo-last", json={}, headers=auth(ana))
    assert last.status_code == 200 and last.json()["removed"] == ["/docs/c.md"]


def test_every_journal_route_answers_in_its_declared_shape(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("ana"))
    _write(client, h["Authorization"].split()[1], "/docs/a.md", "one\n")
    _write(client, h["Authorization"].split()[1], "/docs/a.md", "two\n")
    calls = [
        ("GET", "/v1/changes", client.get("/v1/changes", headers=h)),
        (
            "GET",
            "/v1/changes/diff",
            client.get("/v1/changes/diff", params={"change": 2}, headers=h),
        ),
        ("POST", "/v1/checkpoints", client.post("/v1/checkpoints", json={"name": "x"}, headers=h)),
        ("GET", "/v1/checkpoints", client.get("/v1/checkpoints", headers=h)),
        (
            "POST",
            "/v1/changes/undo",
            client.post("/v1/changes/undo", json={"change": 2}, headers=h),
        ),
        ("POST", "/v1/changes/undo-last", client.post("/v1/changes/undo-last", json={}, headers=h)),
        (
            "POST",
            "/v1/checkpoints/restore",
            client.post("/v1/checkpoints/restore", json={"checkpoint": "x"}, headers=h),
        ),
        (
            "POST",
            "/v1/changes/revert",
            client.post("/v1/changes/revert", json={"thread": "none"}, headers=h),
        ),
    ]
    by_route = {(e.method, e.path): e for e in all_endpoints()}
    for method, path, response in calls[:-1]:
        assert response.status_code == 200, (path, response.text)
        by_route[(method, path)].operation.result.model_validate(response.json())
    assert calls[-1][2].status_code == 404  # no change in that thread
    journal_routes = {k for k in by_route if k[1].startswith(("/v1/changes", "/v1/checkpoints"))}
    assert journal_routes == {(m, p) for m, p, _ in calls}
