"""A change to a file two tenants may read names its maker to its own tenant only: a viewer of
another tenant is told "(another tenant)", no thread, and narrowing by a principal or a thread
never matches another tenant's (ids and thread names are each tenant's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import NotFoundError, Principal
from bastion.config import load_workspace
from bastion.workspace.journal.review import ANOTHER_TENANT

ANA = Principal.of("ana", tenant="acme", roles=("staff",), clearance="internal")
BO = Principal.of("bo", tenant="globex", roles=("staff",), clearance="internal")
ANA_OF_GLOBEX = Principal.of("ana", tenant="globex", roles=("staff",), clearance="internal")
CONFIG = """
[[mounts]]
prefix = "/shared"
url = "file:shared"
scope = "read_write"

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]

[journal]
path = "journal.db"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "shared").mkdir()
    path = tmp_path / "bastion.toml"
    path.write_text(CONFIG, encoding="utf-8")
    load_workspace(path, principal=ANA).sync().with_thread("t1").write("/shared/x.md", "ana's\n")
    return path


def test_another_tenants_change_is_shown_without_its_maker(config: Path) -> None:
    mine = load_workspace(config, principal=ANA).sync().changes()
    assert [(c.principal, c.thread) for c in mine] == [("ana", "t1")]
    theirs = load_workspace(config, principal=BO).sync().changes()
    assert [(c.principal, c.tenant, c.thread, c.path) for c in theirs] == [
        (ANOTHER_TENANT, None, None, "/shared/x.md")
    ]


@pytest.mark.parametrize("viewer", [BO, ANA_OF_GLOBEX], ids=["other-id", "same-id"])
def test_narrowing_never_matches_another_tenants_principal_or_thread(
    config: Path, viewer: Principal
) -> None:
    ws = load_workspace(config, principal=viewer).sync()
    assert ws.changes(principal="ana") == []
    assert ws.changes(thread="t1") == []
    with pytest.raises(NotFoundError):
        ws.revert("t1")
    assert (config.parent / "shared" / "x.md").read_text() == "ana's\n"


def test_a_thread_name_is_each_tenants_own(config: Path) -> None:
    ws = load_workspace(config, principal=BO).sync().with_thread("t1")
    ws.write("/shared/y.md", "bo's\n")
    assert [c.path for c in ws.changes(thread="t1")] == ["/shared/y.md"]
    ws.revert("t1")
    assert not (config.parent / "shared" / "y.md").exists()
    assert (config.parent / "shared" / "x.md").read_text() == "ana's\n"
