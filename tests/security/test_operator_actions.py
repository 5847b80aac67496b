"""Operator actions are permissions a policy grants, default deny.

* ``rebuild_index`` and ``reindex`` need the ``reindex`` action on ``/``: without it a principal
  could wipe the index every principal shares. A refusal is a one-line
  :class:`PolicyDeniedError`, audited, and leaves the index as it was.
* Reading the audit log (``Workspace.audit``) gives a principal its own records only, unless
  the policy grants it the ``audit`` action on ``/``: then the records of its own tenant
  (another tenant's records are never a principal's to read; the owner reads every one).
* ``*`` in a rule grants neither. A workspace built without a principal is its owner's and
  keeps both, as before.

Tested as decision tables over real workspaces (memory stores, the in-memory index).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import (
    Action,
    MemoryAuditSink,
    MemoryStore,
    Mount,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    Workspace,
)
from bastion.agents.mcp import mcp_server
from bastion.agents.tools import Toolset
from bastion.core.audit_sinks import AuditRecord, AuditView, JsonLinesAuditSink, NullAuditSink
from bastion.core.errors import ConfigurationError
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

OPERATOR = Principal.of("olga", roles={"ops"})
ALICE = Principal.of("alice", tenant="acme", roles={"staff"})
BOB = Principal.of("bob", tenant="acme", roles={"staff"})
ALICE_ELSEWHERE = Principal.of("alice", tenant="globex", roles={"staff"})
"""Same id, another tenant: not the same principal."""

FILE_RULES = (Rule.allow("*", "/**"),)


def _policy(*operator_rules: Rule) -> Policy:
    return Policy(rules=(*operator_rules, *FILE_RULES))


async def _workspace(policy: Policy, principal: Principal | None = None) -> Workspace:
    owner = Workspace(
        [Mount.of("/docs", MemoryStore())], policy=policy, knowledge=Knowledge(MemoryIndex())
    )
    await owner.write("/docs/a.md", "# Alpha\n\nThe canary keys rotate weekly.\n")
    await owner.write("/docs/b.md", "# Beta\n\nBackups run at night.\n")
    return owner if principal is None else owner.with_principal(principal)


async def _hits(ws: Workspace) -> list[str]:
    return [hit.path for hit in (await ws.search("canary keys", mode="bm25")).hits]


# -- rebuild_index and reindex ----------------------------------------------------------------

REINDEX_TABLE = [
    # (what, policy, principal, allowed)
    ("owner, no rule", _policy(), None, True),
    ("'*' does not grant it", _policy(), ALICE, False),
    ("allow_all grants it", Policy.allow_all(), ALICE, True),
    (
        "named for the principal",
        _policy(Rule.allow("reindex", "/", principals={"olga"})),
        OPERATOR,
        True,
    ),
    (
        "named for someone else",
        _policy(Rule.allow("reindex", "/", principals={"olga"})),
        ALICE,
        False,
    ),
    ("by role", _policy(Rule.allow(["reindex"], "/**", roles={"ops"})), OPERATOR, True),
    ("by role, not held", _policy(Rule.allow(["reindex"], "/**", roles={"ops"})), BOB, False),
    ("on a folder only", _policy(Rule.allow("reindex", "/docs/**")), ALICE, False),
    (
        "a deny first",
        Policy(
            rules=(
                Rule.deny("reindex", "/**", principals={"alice"}),
                Rule.allow(list(Action), "/**"),
            )
        ),
        ALICE,
        False,
    ),
    ("other operator actions do not", _policy(Rule.allow(["audit", "label"], "/**")), ALICE, False),
    (
        "a tenant rule",
        _policy(Rule.allow("reindex", "/", tenants={"acme"})),
        ALICE_ELSEWHERE,
        False,
    ),
]


@pytest.mark.parametrize("run", ["rebuild_index", "reindex"])
@pytest.mark.parametrize(
    ("policy", "principal", "allowed"),
    [row[1:] for row in REINDEX_TABLE],
    ids=[row[0] for row in REINDEX_TABLE],
)
async def test_reindexing_needs_the_reindex_action(
    run: str, policy: Policy, principal: Principal | None, allowed: bool
) -> None:
    ws = await _workspace(policy, principal)
    before = await _hits(ws.with_principal(Principal.of("reader")) if principal is None else ws)
    task = getattr(ws, run)
    if allowed:
        summary = await task()
        assert summary.indexed + summary.unchanged == 2
        return
    with pytest.raises(PolicyDeniedError) as caught:
        await task()
    message = str(caught.value)
    assert "\n" not in message and f"{run} is an operator task" in message
    assert "'reindex' action" in message
    record = ws.audit.records[-1]
    assert record.operation == run.replace("_", "-") and not record.allowed
    assert record.principal == ws.principal.id and "reindex" in record.reason
    assert await _hits(ws) == before == ["/docs/a.md"]  # the shared index was left alone


async def test_a_refused_rebuild_leaves_the_index_for_everyone() -> None:
    ws = await _workspace(_policy(), ALICE)
    for _ in range(3):
        with pytest.raises(PolicyDeniedError):
            await ws.rebuild_index()
    bob = ws.with_principal(BOB)
    assert await _hits(bob) == ["/docs/a.md"]


def test_the_blocking_facade_is_refused_too() -> None:
    import asyncio

    ws = asyncio.run(_workspace(_policy(), ALICE)).sync()
    with pytest.raises(PolicyDeniedError):
        ws.rebuild_index()
    with pytest.raises(PolicyDeniedError):
        ws.reindex()


async def test_the_permission_comes_from_a_policy_file() -> None:
    policy = Policy.from_dict(
        {
            "rules": [
                {
                    "effect": "allow",
                    "actions": ["reindex", "audit"],
                    "paths": ["/"],
                    "roles": ["ops"],
                },
                {"effect": "allow", "actions": ["*"], "paths": ["/**"]},
            ]
        }
    )
    ws = await _workspace(policy, OPERATOR)
    assert (await ws.rebuild_index()).indexed == 2
    with pytest.raises(PolicyDeniedError):
        await ws.with_principal(ALICE).reindex()


async def test_no_agent_tool_and_no_mcp_tool_reaches_an_operator_task() -> None:
    ws = await _workspace(Policy.allow_all(), OPERATOR)
    names = set(Toolset(ws).names) | set(Toolset(ws, style="intent").names)
    served = mcp_server(Toolset(ws))
    assert served is not None
    assert not {n for n in names if "index" in n or "audit" in n or "label" in n}


# -- reading the audit log --------------------------------------------------------------------


async def _busy_sink() -> tuple[Workspace, MemoryAuditSink]:
    """A workspace whose shared sink holds records of alice, bob, alice@globex and olga."""
    sink = MemoryAuditSink()
    owner = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=_policy(Rule.allow("audit", "/", principals={"olga"})),
        audit=sink,
    )
    await owner.write("/docs/a.md", "alpha\n")
    for who in (ALICE, BOB, ALICE_ELSEWHERE, OPERATOR):
        view = owner.with_principal(who)
        await view.read_text("/docs/a.md")
        await view.exists(f"/docs/{who.id}-{who.tenant}.md")
    return owner, sink


def _who(records: tuple[AuditRecord, ...]) -> set[tuple[str, str]]:
    return {(r.principal, r.tenant) for r in records}


@pytest.mark.parametrize(
    ("principal", "sees"),
    [
        (ALICE, {("alice", "acme")}),
        (BOB, {("bob", "acme")}),
        (ALICE_ELSEWHERE, {("alice", "globex")}),
        (Principal.of("nobody"), set()),
    ],
    ids=["alice", "bob", "alice@globex", "nobody"],
)
async def test_a_principal_reads_only_its_own_audit_records(
    principal: Principal, sees: set[tuple[str, str]]
) -> None:
    owner, sink = await _busy_sink()
    view = owner.with_principal(principal)
    for audit in (view.audit, view.sync().audit):
        assert isinstance(audit, AuditView) and not audit.everyone
        records = audit.records  # type: ignore[attr-defined]
        assert _who(records) == sees
        assert len(records) == sum(
            1 for r in sink.records if (r.principal, r.tenant) == (principal.id, principal.tenant)
        )
        assert not any(
            f"{other}-" in r.path
            for r in records
            for other in ("bob", "olga")
            if other != principal.id
        )


async def test_the_audit_action_reads_every_record_of_its_own_tenant() -> None:
    owner, sink = await _busy_sink()
    view = owner.with_principal(OPERATOR)
    audit = view.audit
    assert isinstance(audit, AuditView) and audit.everyone
    assert audit.records == tuple(r for r in sink.records if r.tenant == "default")
    assert _who(audit.records) == {("olga", "default"), ("local", "default")}


async def test_star_and_allow_all() -> None:
    owner, sink = await _busy_sink()
    star = Workspace(owner.mounts, policy=_policy(), principal=OPERATOR, audit=sink)
    assert _who(star.audit.records) == {("olga", "default")}  # type: ignore[attr-defined]
    everything = Workspace(owner.mounts, policy=Policy.allow_all(), principal=ALICE, audit=sink)
    records = everything.audit.records  # type: ignore[attr-defined]
    assert records == tuple(r for r in sink.records if r.tenant == "acme")
    assert _who(records) == {("alice", "acme"), ("bob", "acme")}


async def test_the_owner_keeps_the_sink_itself() -> None:
    owner, sink = await _busy_sink()
    assert owner.audit is sink
    assert owner.sync().audit is sink


async def test_a_view_writes_records_only_in_its_own_name() -> None:
    owner, sink = await _busy_sink()
    audit = owner.with_principal(ALICE).audit
    forged = AuditRecord(0.0, "bob", "acme", "read", "/docs/a.md", True, "allowed")
    with pytest.raises(PolicyDeniedError):
        audit.append(forged)
    own = AuditRecord(0.0, "alice", "acme", "note", "/", True, "allowed")
    audit.append(own)
    assert sink.records[-1] is own and forged not in sink.records


async def test_a_json_lines_log_is_read_through_the_same_view(tmp_path: Path) -> None:
    sink = JsonLinesAuditSink(tmp_path / "audit.jsonl")
    owner = Workspace([Mount.of("/docs", MemoryStore())], policy=_policy(), audit=sink)
    await owner.with_principal(ALICE).write("/docs/a.md", "x")
    await owner.with_principal(BOB).exists("/docs/a.md")
    with (tmp_path / "audit.jsonl").open("ab") as log:
        log.write(b'{"cut short by a cr')  # a crash mid-line: skipped, not fatal
    assert _who(owner.with_principal(ALICE).audit.records) == {("alice", "acme")}  # type: ignore[attr-defined]
    assert _who(sink.records) == {("alice", "acme"), ("bob", "acme")}
    sink.close()


async def test_a_sink_that_cannot_be_read_back_says_so() -> None:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        principal=ALICE,
        audit=NullAuditSink(),
    )
    await ws.write("/docs/a.md", "x")
    with pytest.raises(ConfigurationError) as caught:
        ws.audit.records  # type: ignore[attr-defined]  # noqa: B018
    assert "cannot be read back" in str(caught.value)
