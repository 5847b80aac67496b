"""Tenant tables and source routing through Workspace.search: a router can narrow a search,
never widen it, and a failing router searches every authorized source."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bastion import Labels, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex, table_name
from bastion.knowledge.routing import Router


def _workspace(router: Router | None) -> tuple[Workspace, PartitionedIndex, list[tuple]]:
    calls: list[tuple] = []

    def recording(query: str, sources: Sequence[str]):
        calls.append((query, tuple(sources)))
        assert router is not None
        return router(query, sources)

    index = PartitionedIndex(lambda name: MemoryIndex())
    knowledge = Knowledge(index, router=recording if router else None)
    mounts = [
        Mount.of("/acme-hr", MemoryStore(), labels=Labels(tenant="acme")),
        Mount.of("/acme-eng", MemoryStore(), labels=Labels(tenant="acme")),
        Mount.of("/globex", MemoryStore(), labels=Labels(tenant="globex")),
        Mount.of("/public", MemoryStore()),
    ]
    root = Principal.of("root", tenant="acme", clearance="restricted")
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=knowledge, principal=root)
    return ws, index, calls


async def _seed(ws: Workspace) -> None:
    await ws.write("/acme-hr/pay.md", "# Pay\n\nThe vacation policy grants 25 days.\n")
    await ws.write("/acme-eng/dev.md", "# Dev\n\nThe vacation calendar lists on-call swaps.\n")
    await ws.write("/public/faq.md", "# FAQ\n\nAsk HR about the vacation policy.\n")
    other = ws.with_principal(Principal.of("g", tenant="globex"))
    await other.write("/globex/secret.md", "# Globex\n\nGlobex vacation policy: 40 days.\n")


async def test_each_tenant_and_source_has_its_own_table() -> None:
    ws, index, _ = _workspace(None)
    await _seed(ws)
    assert sorted(index.tables()) == sorted(
        [
            table_name("acme", "/acme-eng"),
            table_name("acme", "/acme-hr"),
            "chunks__tenant_globex__src_globex",
            "chunks__tenant_shared__src_public",
        ]
    )
    # A name that loses characters gets a short hash, so "/acme-hr" and "/acme_hr" differ.
    assert table_name("acme", "/acme-hr").startswith("chunks__tenant_acme__src_acme_hr_")
    assert table_name("acme", "/acme-hr") != table_name("acme", "/acme_hr")
    hits = await ws.search("vacation policy", mode="bm25", k=10)
    assert sorted(h.path for h in hits.hits) == [
        "/acme-eng/dev.md",
        "/acme-hr/pay.md",
        "/public/faq.md",
    ]


async def test_router_narrows_to_its_pick() -> None:
    ws, _, calls = _workspace(lambda q, sources: ["/acme-hr"])
    await _seed(ws)
    hits = await ws.search("vacation policy", mode="bm25", k=10)
    assert [h.path for h in hits.hits] == ["/acme-hr/pay.md"]
    # The router was offered only what the asker may query: never the other tenant's source.
    offered = calls[-1][1]
    assert "/globex" not in offered and set(offered) == {"/acme-eng", "/acme-hr", "/public"}


@pytest.mark.parametrize(
    "router",
    [
        lambda q, s: ["/globex"],  # a source the asker may not query: ignored
        lambda q, s: [],  # nothing picked
        lambda q, s: 1 / 0,  # the router fails
        lambda q, s: ["../../globex", None],  # nonsense
    ],
)
async def test_router_can_never_widen_and_falls_back_to_all(router) -> None:
    ws, _, _ = _workspace(router)
    await _seed(ws)
    hits = await ws.search("vacation policy", mode="bm25", k=10)
    paths = sorted(h.path for h in hits.hits)
    assert paths == ["/acme-eng/dev.md", "/acme-hr/pay.md", "/public/faq.md"]
    assert all("globex" not in h.snippet.lower() for h in hits.hits)


async def test_chat_router_picks_through_a_model_and_never_widens() -> None:
    from bastion.governance.answer.chat import ChatModel, Message
    from bastion.governance.answer.router import ChatRouter

    class Scripted(ChatModel):
        name = "scripted"

        def __init__(self, reply: str) -> None:
            self.reply = reply
            self.seen: list[str] = []

        async def complete(self, messages: Sequence[Message], *, max_tokens=None) -> str:
            self.seen.append(messages[-1].content)
            return self.reply

    model = Scripted('{"sources": ["/acme-hr", "/globex"]}')
    ws, _, _ = _workspace(None)
    ws._link().knowledge.router = ChatRouter(model, {"/acme-hr": "pay and leave"})
    await _seed(ws)
    hits = await ws.search("vacation policy", mode="bm25", k=10)
    assert [h.path for h in hits.hits] == ["/acme-hr/pay.md"]
    assert "/globex" not in model.seen[-1] and "pay and leave" in model.seen[-1]
    model.reply = "I cannot decide."  # unusable: every authorized source is searched
    hits = await ws.search("vacation policy", mode="bm25", k=10)
    assert len(hits.hits) == 3
