"""Audit records: always exportable text, checks made on a principal's behalf marked
internal and kept out of its own view, the rest of its view as it was told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bastion import Labels, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools import Toolset
from bastion.core.audit import AuditRecord, MemoryAuditSink, exportable, on_behalf
from bastion.core.audit_sinks import JsonLinesAuditSink
from bastion.core.models import Action
from bastion.core.policy import Rule
from bastion.knowledge.engine import Knowledge

DANA = Principal.of("dana", tenant="acme", clearance="internal")
OPS = Principal.of("olga", tenant="acme", roles={"ops"}, clearance="internal")


def _workspace(sink: MemoryAuditSink) -> Workspace:
    store = MemoryStore()
    mounts = [Mount.of("/drive", store, "read_write", labels=Labels(tenant="acme"))]
    policy = Policy(
        rules=(
            Rule.allow(["audit"], "/**", roles={"ops"}),
            Rule.allow([a for a in Action if a.value not in ("audit", "reindex")], "/**"),
        )
    )
    ws = Workspace(mounts, policy=policy, audit=sink, knowledge=Knowledge())
    owner = ws.with_principal(Principal.of("admin", tenant="acme", clearance="restricted")).sync()
    owner.write("/drive/plan.md", "# Plan\n\nOsprey is on the list.\n")
    owner.write(
        "/drive/hr/reorg-plan.md",
        "---\nclassification: restricted\n---\n# Reorg\n\nThe Osprey team moves.\n",
    )
    ws.sync().rebuild_index()
    return ws


def test_checks_on_a_principals_behalf_are_internal_and_not_in_its_view() -> None:
    sink = MemoryAuditSink()
    ws = _workspace(sink)
    dana = ws.with_principal(DANA).sync()
    with on_behalf():
        assert dana.exists("/drive/hr/reorg-plan.md") is False
        assert dana.exists("/drive/hr") is False
    dana.search("Osprey", mode="bm25")
    own = dana.audit.records  # type: ignore[attr-defined]
    assert [(r.operation, r.path, r.internal) for r in own] == [("search", "/", False)]
    ops = ws.with_principal(OPS).sync()
    every = ops.audit.records  # type: ignore[attr-defined]
    assert not any(r.internal for r in every)  # an operator reads requests, as told
    marked = [(r.principal, r.operation, r.path) for r in sink.records if r.internal]
    assert marked == [
        ("dana", "exists", "/drive/hr/reorg-plan.md"),
        ("dana", "exists", "/drive/hr"),
    ]
    assert not any(r.internal for r in sink.records if r.operation in ("write", "search"))
    assert all(not r.internal for r in every if r.principal != "dana")


async def test_the_hit_checks_of_an_agent_tool_are_internal() -> None:
    sink = MemoryAuditSink()
    ws = _workspace(sink).with_principal(DANA)
    tools = Toolset(ws, style="intent")
    found = await tools.call(
        "discover", {"operation": "search_content", "query": "osprey", "extension": "md"}
    )
    assert found["files"] == ["/drive/plan.md"]
    meaning = await tools.call(
        "discover", {"operation": "search_semantic", "query": "osprey", "min_size": 1}
    )
    assert [h["path"] for h in meaning["hits"]] == ["/drive/plan.md"]
    own = [(r.operation, r.internal) for r in ws.audit.records]  # type: ignore[attr-defined]
    assert own == [("grep", False), ("search", False)]
    checks = [r for r in sink.records if r.principal == "dana" and r.operation == "stat"]
    assert len(checks) == 2 and all(r.internal for r in checks)


@pytest.mark.parametrize(
    "text",
    ["/a/\ud800", "\udc80", "/é/\udfff/ü", "\ud83d\ude00 pair written apart", "\udbff\udbff"],
)
def test_a_record_holds_only_text_utf8_carries(text: str, tmp_path: Path) -> None:
    record = AuditRecord(1.0, text, text, text, text, False, text, target=text, told=text)
    for value in (record.principal, record.tenant, record.operation, record.path):
        assert value == exportable(text) and value.encode("utf-8")
    assert record.reason == record.target == record.told == exportable(text)
    assert json.loads(json.dumps(record.to_dict())) == record.to_dict()
    sink = JsonLinesAuditSink(tmp_path / "log.jsonl")
    sink.append(record)
    sink.close()
    (back,) = sink.records
    assert back == record  # what is read back is what was kept


def test_text_that_encodes_is_kept_as_it_is() -> None:
    for text in ("/plain", "/é/ü/日本", "\\ud800 typed as six characters", ""):
        assert exportable(text) is text
        record = AuditRecord(1.0, "p", "t", "read", text, True, "allowed")
        assert record.path is text


def test_an_id_kept_as_its_escape_is_never_read_as_another_principals() -> None:
    sink = MemoryAuditSink()
    policy = Policy(rules=(Rule.allow("*", "/**"),))  # no audit action: own records only
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=policy, audit=sink)
    odd = ws.with_principal(Principal.of("agent-\ud800")).sync()  # Python callers only
    odd.write("/m/secret-name.md", "x")
    spelt = ws.with_principal(Principal.of("agent-\\ud800")).sync()  # a plain id: a token's
    spelt.write("/m/mine.md", "y")
    assert [r.principal for r in sink.records] == ["agent-\\ud800", "agent-\\ud800"]
    assert spelt.audit.records == ()  # type: ignore[attr-defined] # fails closed: operators'
    assert odd.audit.records == ()  # type: ignore[attr-defined]
