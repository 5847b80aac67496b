"""Overlay layers over real HTTP are kept per tenant: a token of another tenant reads the base
through the files API, and the overlay review (changes, diff, apply, discard) with or without
the same thread answers as for no layer; its own writes land in its own tenant's layer and
never in the first tenant's review or apply (decision 0104)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion import Policy, Workspace
from bastion.config import MountConfig
from bastion.governance.identity import IdentityConfig
from bastion.server import create_app
from bastion.workspace.operations.overlay import OverlayChangesResult, OverlayOutcomeResult

from .support import Token, auth, running


@pytest.fixture
def served(tmp_path: Path, identity: IdentityConfig) -> Iterator[tuple[httpx.Client, Path]]:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.md").write_text("base\n")
    (tmp_path / "project" / "old.md").write_text("old\n")
    mount = MountConfig("/code", "file:project", overlay="file:layers").open(tmp_path)
    ws = Workspace([mount], policy=Policy.allow_all())
    with running(create_app(ws, identity=identity)) as url, httpx.Client(base_url=url) as c:
        yield c, tmp_path


def _changes(client: httpx.Client, who: str, thread: str | None = None) -> list[str]:
    params = {"prefix": "/code"} | ({"thread": thread} if thread else {})
    r = client.get("/v1/overlay/changes", params=params, headers=auth(who))
    assert r.status_code == 200, r.text
    return sorted(c.path for c in OverlayChangesResult.model_validate(r.json()).changes)


def test_another_tenant_sees_the_base_and_plants_nothing_over_http(
    served: tuple[httpx.Client, Path], token: Token
) -> None:
    client, root = served
    ana, bob = token("ana", tenant="acme"), token("bob", tenant="globex")
    write = {"path": "/code/a.md", "content": "acme secret\n"}
    assert client.post("/v1/files/write", json=write, headers=auth(ana)).status_code in (200, 201)
    gone = client.post("/v1/files/delete", json={"path": "/code/old.md"}, headers=auth(ana))
    assert gone.status_code in (200, 204), gone.text
    read = client.get("/v1/files/read", params={"path": "/code/a.md"}, headers=auth(bob))
    assert read.status_code == 200 and "acme secret" not in read.text and "base" in read.text
    old = client.get("/v1/files/read", params={"path": "/code/old.md"}, headers=auth(bob))
    assert old.status_code == 200 and "old" in old.text  # no whiteout crosses tenants
    for thread in (None, "t1"):
        assert _changes(client, bob, thread) == []
        body = {"prefix": "/code"} | ({"thread": thread} if thread else {})
        diff = client.post("/v1/overlay/diff", json=body, headers=auth(bob))
        assert diff.status_code == 200 and diff.json() == {"diff": ""}
        named = body | {"paths": ["/code/a.md"]}
        for verb in ("apply", "discard"):
            refused = client.post(f"/v1/overlay/{verb}", json=named, headers=auth(bob))
            assert refused.status_code == 404 and "acme" not in refused.text
    planted = {"path": "/code/planted.md", "content": "from globex\n"}
    assert client.post("/v1/files/write", json=planted, headers=auth(bob)).status_code in (200, 201)
    assert _changes(client, ana) == ["/code/a.md", "/code/old.md"]
    done = client.post("/v1/overlay/apply", json={"prefix": "/code"}, headers=auth(ana))
    assert done.status_code == 200, done.text
    applied = OverlayOutcomeResult.model_validate(done.json()).applied
    assert sorted(applied) == ["/code/a.md", "/code/old.md"]
    assert (root / "project" / "a.md").read_text() == "acme secret\n"
    assert not (root / "project" / "planted.md").exists()
    assert _changes(client, bob) == ["/code/planted.md"]
    assert (root / "layers" / "tenants" / "n-globex" / "shared" / "planted.md").is_file()
