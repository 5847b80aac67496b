"""The review's governance over HTTP, on a real server on loopback: the same answers as the
library. An HR viewer's undo of a delete, where the journal hides the sidecar's entry from
her, brings the file back as hard to read as it was; another tenant's checkpoint is not
listed and its name is free; a hidden change's diff is a 404 like a missing one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bastion import NotFoundError, Principal
from bastion.config import WorkspaceConfig, load_workspace
from bastion.server.app import create_app
from bastion.server.settings import ServerSettings
from server.support import running

ADMIN = Principal.of("admin", tenant="acme", roles=("hr",), clearance="restricted")
HANA = Principal.of("hana", tenant="acme", roles=("hr",), clearance="internal")
READER = Principal.of("rita", tenant="acme", clearance="internal")
GLOBEX = Principal.of("gus", tenant="globex", clearance="internal")
CONFIG = """
[[mounts]]
prefix = "/docs"
url = "file:docs"
labels = { classification = "public" }

[[mounts]]
prefix = "/vault"
url = "file:vault"
labels = { classification = "confidential" }

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]

[journal]
path = "journal.db"
"""


def test_review_over_http_answers_as_the_library(tmp_path: Path) -> None:
    for folder in ("docs", "vault"):
        (tmp_path / folder).mkdir()
    config = tmp_path / "bastion.toml"
    config.write_text(CONFIG, encoding="utf-8")
    admin = load_workspace(config, principal=ADMIN).sync()
    admin.write("/vault/x.txt", "vault\n")
    admin.write("/vault/x.txt.labels.yaml", "roles: [hr]\n")
    admin.write("/docs/plan.txt", "zebra plan\n")
    admin.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    admin.delete("/docs/plan.txt")
    deleted = admin.changes()[-1].id
    admin.write("/vault/x.txt", "zebra vault two\n")
    hidden = admin.changes()[-1].id
    load_workspace(config, principal=GLOBEX).sync().checkpoint("q3")

    app = create_app(
        WorkspaceConfig.from_file(config).build(owner=True),
        settings=ServerSettings(demo_login=True),
        demo_users=[(HANA, "hr"), (READER, "staff")],
    )
    with running(app) as url, httpx.Client(base_url=url) as client:

        def auth(user: str) -> dict[str, str]:
            token = client.post("/v1/auth/demo", json={"user": user}).json()["token"]
            return {"Authorization": f"Bearer {token}"}

        hana, rita = auth("hana"), auth("rita")
        for change in (hidden, hidden + 1000):
            r = client.get("/v1/changes/diff", params={"change": change}, headers=rita)
            assert r.status_code == 404 and "zebra" not in r.text
        assert client.get("/v1/checkpoints", headers=hana).json()["checkpoints"] == []
        r = client.post("/v1/checkpoints/restore", json={"checkpoint": "q3"}, headers=hana)
        assert r.status_code == 404 and "globex" not in r.text
        assert client.post("/v1/checkpoints", json={"name": "q3"}, headers=hana).status_code == 200
        r = client.post("/v1/changes/undo", json={"change": deleted}, headers=hana)
        assert r.status_code == 200 and r.json()["restored"] == ["/docs/plan.txt"]
    assert admin.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})
    with pytest.raises(NotFoundError):  # restored as hard to read as it was
        load_workspace(config, principal=READER).sync().read_text("/docs/plan.txt")
