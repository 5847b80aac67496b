"""``bastion config check`` tells who may do what on each mount with the workspace's own
answers (``core.visibility``): a mount a principal sees nothing of grants nothing, a
write-only drop box's labels hide nothing from its writers, and a rule that allows a folder
inside a mount grants that action on the mount. The listing agrees with what the principal
then sees through the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Run, as_json

from bastion.config import WorkspaceConfig, load_workspace
from bastion.core.errors import NotFoundError

WORKSPACE = """
[[mounts]]
prefix = "/docs"
url = "memory://"
scope = "read_only"
labels = { tenant = "acme", classification = "internal" }

[[mounts]]
prefix = "/drop"
url = "memory://"
scope = "write_only"
labels = { tenant = "acme", classification = "restricted" }

[[mounts]]
prefix = "/team"
url = "memory://"

[[mounts]]
prefix = "/vault/secret"
url = "memory://"

[policy.limits]
blocked_segments = ["secret"]

[[policy.rules]]
effect = "allow"
actions = ["read", "list", "search"]
paths = ["/docs/**", "/team/public/**"]

[[policy.rules]]
effect = "allow"
actions = ["write"]
paths = ["/drop/**"]

[[policy.rules]]
effect = "allow"
actions = ["*"]
paths = ["/**"]
roles = ["editor"]

[users.guest]
tenant = "acme"

[users.ed]
tenant = "acme"
roles = ["editor"]
clearance = "restricted"
"""


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "bastion.toml").write_text(WORKSPACE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "bastion.toml"


def test_who_may_do_what_follows_the_workspaces_visibility(workspace: Path, run: Run) -> None:
    del workspace
    may = as_json(run("config", "check", "--json"))["may"]
    assert may["guest"] == {
        "/docs": [],  # its labels do not admit a public clearance: nothing of it is seen
        "/drop": ["write"],  # a drop box's labels hide nothing from its writers
        "/team": ["read", "list", "search"],  # the rule allows /team/public/**
        "/vault/secret": [],  # a blocked segment
    }
    assert may["ed"] == {
        "/docs": ["read", "list", "search"],
        "/drop": ["write"],
        "/team": ["read", "list", "search", "write", "delete"],
        "/vault/secret": [],
    }


def test_the_workspace_does_what_the_listing_grants(workspace: Path) -> None:
    config = WorkspaceConfig.from_file(workspace)
    ed = load_workspace(workspace, principal=config.users["ed"]).sync()
    guest = ed.with_principal(config.users["guest"])
    ed.write("/team/public/note.md", "hello")
    assert guest.read_text("/team/public/note.md") == "hello"  # "read" on /team
    guest.write("/drop/report.md", "from guest")  # "write" on /drop, labels restricted
    with pytest.raises(NotFoundError):  # nothing of /docs
        guest.list("/docs")
    with pytest.raises(NotFoundError):  # nothing of the blocked mount, even for ed
        ed.list("/vault/secret")
