"""Tenancy is a hard boundary for operators too: a principal granted the ``audit`` action (on
``/``) reads the audit records of its own tenant only, and an explanation it is given names
nothing of another tenant: not its users, not its mounts, not its documents (a document, a
sidecar, a folder of them or a path below one reads exactly as a missing path does).

Before 2026-11-28 an operator of one tenant read every tenant's records (paths, principals,
reasons) and explained any user on any document. The owner of the workspace (built without a
principal) still reads and explains everything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from security_stores import seed

from bastion.core.audit import MemoryAuditSink
from bastion.core.errors import NotFoundError
from bastion.core.models import Action, Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.workspace import Workspace
from bastion.workspace.explain import explain_access, tenant_users

OLGA = Principal.of("olga", tenant="acme", roles={"ops"}, clearance="restricted")
ANA = Principal.of("ana", tenant="acme", roles={"staff"}, clearance="internal")
GIL = Principal.of("gil", tenant="globex", roles={"staff"}, clearance="internal")
GWEN = Principal.of("gwen", tenant="globex", roles={"ops"}, clearance="restricted")

GLOBEX = "---\ntenant: globex\nclassification: internal\n---\nGLOBEX-SECRET merger\n"
ACME = "---\ntenant: acme\nclassification: internal\n---\nacme plan\n"

POLICY = Policy(
    rules=(
        Rule.allow([a for a in Action if a is not Action.AUDIT], "/**"),
        Rule.allow([Action.AUDIT], "/**", roles={"ops"}),
    )
)


async def _owner(make_store: Callable[[str], Store], sink: MemoryAuditSink) -> Workspace:
    shared, acme, globex = make_store("shared"), make_store("acme"), make_store("globex")
    await seed(
        shared,
        {
            "/acme.md": ACME,
            "/g.md": GLOBEX,
            "/g.txt": "GLOBEX-SECRET\n",
            "/g.txt.labels.yaml": "tenant: globex\n",
            "/gfolder/one.md": GLOBEX,
            "/gfolder/deep/two.md": GLOBEX,
            "/mixed/a.md": ACME,
            "/mixed/g.md": GLOBEX,
        },
    )
    await seed(acme, {"/plan.md": "acme plan\n"})
    await seed(globex, {"/merger.md": "GLOBEX-SECRET\n", "/deals/x.md": "GLOBEX-SECRET\n"})
    mounts = [
        Mount.of("/shared", shared, Scope.READ_WRITE, labels=Labels(classification="internal")),
        Mount.of("/acme", acme, Scope.READ_WRITE, labels=Labels(tenant="acme")),
        Mount.of("/globex", globex, Scope.READ_WRITE, labels=Labels(tenant="globex")),
    ]
    return Workspace(mounts, policy=POLICY, audit=sink)


async def _activity(owner: Workspace) -> None:
    """Requests of each principal of both tenants, allowed and refused."""
    for who, paths in (
        (ANA, ["/acme/plan.md", "/shared/acme.md", "/shared/g.md", "/globex/merger.md"]),
        (GIL, ["/globex/merger.md", "/globex/deals/x.md", "/shared/g.md", "/acme/plan.md"]),
        (GWEN, ["/globex/merger.md"]),
        (OLGA, ["/acme/plan.md"]),
    ):
        ws = owner.with_principal(who)
        for path in paths:
            with contextlib.suppress(NotFoundError):
                await ws.read_text(path)


async def test_an_operator_reads_the_records_of_its_own_tenant_only(
    make_store: Callable[[str], Store],
) -> None:
    sink = MemoryAuditSink()
    owner = await _owner(make_store, sink)
    await _activity(owner)
    for operator, tenant, others in ((OLGA, "acme", {"gil", "gwen"}), (GWEN, "globex", {"ana"})):
        records = owner.with_principal(operator).audit.records  # type: ignore[attr-defined]
        assert records, operator.id
        assert {r.tenant for r in records} == {tenant}
        assert not {r.principal for r in records} & others
        text = repr(records)
        if tenant == "acme":  # globex's own requests named its paths: none is shown
            assert "/globex/deals" not in text
    # the owner (the workspace built without a principal) reads every record
    every = owner.audit.records  # type: ignore[attr-defined]
    assert {r.tenant for r in every} == {"acme", "globex"}


async def test_a_record_whose_tenant_spells_an_escape_is_the_owners_only(
    make_store: Callable[[str], Store],
) -> None:
    """A tenant with a lone surrogate is kept as its escape: it never reads as a tenant that
    spells the escape (fails closed)."""
    sink = MemoryAuditSink()
    owner = await _owner(make_store, sink)
    odd = Principal.of("x", tenant="acme\ud800", roles={"ops"}, clearance="restricted")
    spelled = Principal.of("y", tenant="acme\\ud800", roles={"ops"}, clearance="restricted")
    with contextlib.suppress(NotFoundError):
        await owner.with_principal(odd).read_text("/acme/plan.md")
    assert any(r.tenant == "acme\\ud800" for r in sink.records)
    assert owner.with_principal(spelled).audit.records == ()  # type: ignore[attr-defined]


def _same_but_path(found: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if k != "path"}


PAIRS = [
    ("/globex/merger.md", "/nowhere/merger.md"),  # a mount of another tenant is no mount
    ("/globex/deals", "/nowhere/deals"),
    ("/shared/g.md", "/shared/none.md"),  # a document labelled for another tenant
    ("/shared/g.txt", "/shared/none.txt"),  # ... by its sidecar
    ("/shared/g.txt.labels.yaml", "/shared/none.txt.labels.yaml"),  # the sidecar itself
    ("/shared/gfolder", "/shared/nofolder"),  # a folder of such documents only
    ("/shared/gfolder/deep", "/shared/nofolder/deep"),
    ("/shared/g.md/below", "/shared/none.md/below"),  # a path below such a document
]


@pytest.mark.parametrize(("hidden", "missing"), PAIRS)
@pytest.mark.parametrize("action", [Action.READ, Action.WRITE, Action.LIST, Action.DELETE])
async def test_an_explanation_tells_another_tenants_entry_like_a_missing_one(
    make_store: Callable[[str], Store], hidden: str, missing: str, action: Action
) -> None:
    owner = await _owner(make_store, MemoryAuditSink())
    for user in (ANA, OLGA):
        told = await explain_access(owner, user, VPath.parse(hidden), action, viewer=OLGA)
        absent = await explain_access(owner, user, VPath.parse(missing), action, viewer=OLGA)
        assert _same_but_path(told) == _same_but_path(absent)
        assert "globex" not in repr(_same_but_path(told)).lower()


async def test_an_explanation_still_explains_the_viewers_own_tenant(
    make_store: Callable[[str], Store],
) -> None:
    owner = await _owner(make_store, MemoryAuditSink())
    mine = await explain_access(
        owner, ANA, VPath.parse("/shared/acme.md"), Action.READ, viewer=OLGA
    )
    assert mine["allowed"] is True
    assert mine["label_source"] == "the document's own (front matter or sidecar)"
    mixed = await explain_access(owner, ANA, VPath.parse("/shared/mixed"), Action.LIST, viewer=OLGA)
    assert mixed["allowed"] is True and mixed["label_source"] == "the mount's defaults"
    own_mount = await explain_access(
        owner, ANA, VPath.parse("/acme/plan.md"), Action.READ, viewer=OLGA
    )
    assert own_mount["mount"]["prefix"] == "/acme" and own_mount["allowed"] is True


async def test_the_owner_explains_every_tenant(make_store: Callable[[str], Store]) -> None:
    owner = await _owner(make_store, MemoryAuditSink())
    found = await explain_access(owner, ANA, VPath.parse("/shared/g.md"), Action.READ)
    assert found["labels"]["tenant"] == "globex" and found["decided_by"] == "the document's labels"
    gil = await explain_access(owner, GIL, VPath.parse("/globex/merger.md"), Action.READ)
    assert gil["allowed"] is True


async def test_a_user_of_another_tenant_is_an_unknown_user(
    make_store: Callable[[str], Store],
) -> None:
    owner = await _owner(make_store, MemoryAuditSink())
    with pytest.raises(NotFoundError) as caught:
        await explain_access(owner, GIL, VPath.parse("/shared/acme.md"), Action.READ, viewer=OLGA)
    assert "gil" in str(caught.value) and "globex" not in str(caught.value)
    users = {"ana": ANA, "gil": GIL, "olga": OLGA, "gwen": GWEN}
    assert sorted(tenant_users(users, OLGA)) == ["ana", "olga"]
    assert sorted(tenant_users(users, None)) == ["ana", "gil", "gwen", "olga"]
