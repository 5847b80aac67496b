"""An overlay mount's review over real HTTP: the change list shows only what the token's
principal may read, apply writes the base (each answer in its declared shape), a hidden change
is answered as no change, and a principal without ``write`` is refused with nothing applied."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion import Policy, Rule, Workspace
from bastion.config import MountConfig
from bastion.governance.identity import IdentityConfig
from bastion.server import create_app
from bastion.workspace.operations.overlay import (
    OverlayChangesResult,
    OverlayDiffResult,
    OverlayOutcomeResult,
)

from .support import Token, auth, running

HIDDEN = "---\nclassification: restricted\n---\nkestrel secret\n"


@pytest.fixture
def served(tmp_path: Path, identity: IdentityConfig) -> Iterator[tuple[httpx.Client, Path]]:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.md").write_text("base\n")
    mount = MountConfig("/code", "file:project", overlay="file:layers").open(tmp_path)
    policy = Policy(
        rules=(
            Rule.deny(["write", "delete"], "/code/**", principals=["viewer"]),
            Rule.allow("*", "/**"),
        )
    )
    ws = Workspace([mount], policy=policy)
    with running(create_app(ws, identity=identity)) as url, httpx.Client(base_url=url) as c:
        yield c, tmp_path / "project"


def test_review_and_apply_over_http(served: tuple[httpx.Client, Path], token: Token) -> None:
    client, base = served
    ana, boss = token("ana"), token("boss", clearance="restricted")
    viewer = token("viewer")
    for who, path, text in ((ana, "/code/a.md", "mine\n"), (boss, "/code/h.md", HIDDEN)):
        r = client.post("/v1/files/write", json={"path": path, "content": text}, headers=auth(who))
        assert r.status_code in (200, 201), r.text
    listed = client.get("/v1/overlay/changes", params={"prefix": "/code"}, headers=auth(ana))
    assert listed.status_code == 200
    found = OverlayChangesResult.model_validate(listed.json())
    assert [(c.path, c.action) for c in found.changes] == [("/code/a.md", "write")]
    hidden = client.post(
        "/v1/overlay/apply", json={"prefix": "/code", "paths": ["/code/h.md"]}, headers=auth(ana)
    )
    assert hidden.status_code == 404 and "kestrel" not in hidden.text
    refused = client.post("/v1/overlay/apply", json={"prefix": "/code"}, headers=auth(viewer))
    assert refused.status_code == 403
    assert (base / "a.md").read_text() == "base\n"
    done = client.post("/v1/overlay/apply", json={"prefix": "/code"}, headers=auth(ana))
    assert done.status_code == 200, done.text
    assert OverlayOutcomeResult.model_validate(done.json()).applied == ["/code/a.md"]
    assert (base / "a.md").read_text() == "mine\n"
    assert not (base / "h.md").exists()
    dropped = client.post(
        "/v1/overlay/discard", json={"prefix": "/code", "paths": ["/code/h.md"]}, headers=auth(boss)
    )
    assert OverlayOutcomeResult.model_validate(dropped.json()).discarded == ["/code/h.md"]
    thread = client.get(
        "/v1/overlay/changes", params={"prefix": "/code", "thread": "t1"}, headers=auth(boss)
    )
    assert thread.json() == {"changes": []}


def test_the_diff_over_http_shows_only_what_the_token_may_read(
    served: tuple[httpx.Client, Path], token: Token
) -> None:
    client, base = served
    ana, boss = token("ana"), token("boss", clearance="restricted")
    for who, path, text in ((ana, "/code/a.md", "mine\n"), (boss, "/code/h.md", HIDDEN)):
        r = client.post("/v1/files/write", json={"path": path, "content": text}, headers=auth(who))
        assert r.status_code in (200, 201), r.text
    shown = client.post("/v1/overlay/diff", json={"prefix": "/code"}, headers=auth(ana))
    assert shown.status_code == 200, shown.text
    diff = OverlayDiffResult.model_validate(shown.json()).diff
    assert diff == "--- a/code/a.md\n+++ b/code/a.md\n@@ -1 +1 @@\n-base\n+mine\n"
    named = client.post(
        "/v1/overlay/diff", json={"prefix": "/code", "paths": ["/code/h.md"]}, headers=auth(ana)
    )
    assert named.status_code == 404 and "kestrel" not in named.text
    full = client.post("/v1/overlay/diff", json={"prefix": "/code"}, headers=auth(boss))
    assert "+kestrel secret" in OverlayDiffResult.model_validate(full.json()).diff
    listed = client.get("/v1/overlay/changes", params={"prefix": "/code"}, headers=auth(boss))
    found = OverlayChangesResult.model_validate(listed.json()).changes
    assert [(c.path, c.status, c.conflict) for c in found] == [
        ("/code/a.md", "modified", False),
        ("/code/h.md", "added", False),
    ]
    (base / "a.md").write_text("someone else\n")  # the base moves on: a conflict, told before
    listed = client.get("/v1/overlay/changes", params={"prefix": "/code"}, headers=auth(ana))
    found = OverlayChangesResult.model_validate(listed.json()).changes
    assert [(c.path, c.conflict) for c in found] == [("/code/a.md", True)]
