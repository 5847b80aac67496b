"""One answer to "may this principal read this document", for files and index hits alike
(issue 23, class: *may-read computed twice*).

The guard decided it for files and ``workspace.hitcheck`` again for index hits, each with its
own copy of the rules; both now call ``core.visibility.why_hidden``. These tests hold the two
paths to the same answer: for documents hidden every way we know (front matter, mount labels, a
rule, a blocked segment, a sidecar, a write-only mount, a mount seen nothing of, a hidden mount
nested in a visible one) and several principals, the hits of a search are exactly the files a
read lets the principal see (that the policy lets it search), and a sidecar of a hidden file
is never a hit even when an index holds it."""

from __future__ import annotations

import pytest

from bastion import (
    FileLimits,
    Labels,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Rule,
    VPath,
    Workspace,
)
from bastion.core.models import Action
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

WORD = "zebra"
FILES = {
    "/docs/open.md": f"open {WORD}\n",
    "/docs/conf.md": f"---\nclassification: confidential\n---\nconf {WORD}\n",
    "/docs/board.md": f"---\nroles: [board]\n---\nboard {WORD}\n",
    "/docs/acme.md": f"---\ntenant: acme\n---\nacme {WORD}\n",
    "/docs/vault/v.md": f"vault {WORD}\n",
    "/docs/.git/g.md": f"git {WORD}\n",
    "/docs/nosearch/n.md": f"read, not searched {WORD}\n",
    "/docs/side.md": f"side {WORD}\n",
    "/docs/side.md.labels.yaml": "classification: restricted\n",
    "/docs/denied.md": f"denied {WORD}\n",
    "/docs/denied.md.labels.yaml": f"tags: [{WORD}]\n",
    "/hr/pay.md": f"pay {WORD}\n",
    "/docs/board/minutes.md": f"minutes {WORD}\n",
    "/wo/drop.md": f"dropped {WORD}\n",
    "/team/t.md": f"team {WORD}\n",
}
OWNER = Principal.of("owner", roles={"board", "hr", "team"}, clearance="restricted")
PRINCIPALS = [
    Principal.of("user", clearance="internal"),
    Principal.of("lead", roles={"board"}, clearance="confidential"),
    Principal.of("hr", roles={"hr"}, clearance="restricted", tenant="acme"),
    Principal.of("team", roles={"team"}, clearance="public"),
]


async def workspace() -> tuple[Workspace, Knowledge]:
    board = Labels(roles=frozenset({"board"}))
    knowledge = Knowledge(MemoryIndex())
    ws = Workspace(
        [
            Mount.of("/docs", MemoryStore()),
            Mount.of("/hr", MemoryStore(), labels=Labels(roles=frozenset({"hr"}))),
            Mount.of("/docs/board", MemoryStore(), labels=board),  # hidden nested in /docs
            Mount.of("/wo", MemoryStore(), "write_only"),
            Mount.of("/team", MemoryStore()),  # seen only by the team (a rule)
        ],
        policy=Policy(
            rules=(
                Rule.deny("*", "/docs/vault/**"),
                Rule.deny("read", "/docs/denied.md"),
                Rule.deny("search", "/docs/nosearch/**"),
                Rule.allow("*", "/team/**", roles={"team"}),
                Rule.deny("*", "/team/**"),
                Rule.allow("*", "/**"),
            ),
            limits=FileLimits(blocked_segments=frozenset({".git"})),
        ),
        knowledge=knowledge,
    )
    owner = Workspace(
        ws.mounts,
        policy=Policy.allow_all(),
        principal=OWNER,
        knowledge=knowledge,
    )
    for path, text in FILES.items():
        await owner.write(path, text)
    await owner.rebuild_index()
    return ws, knowledge


async def readable(ws: Workspace, path: str) -> bool:
    try:
        await ws.read_text(path)
    except NotFoundError:
        return False
    except Exception:  # a scope refusal (the write-only mount): not readable either
        return False
    return True


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.id)
async def test_search_hits_are_exactly_the_files_a_read_shows(principal: Principal) -> None:
    shared, _ = await workspace()
    ws = shared.with_principal(principal)
    hits = {h.path for h in (await ws.search(WORD, mode="bm25", k=100)).hits}
    expected = {
        path
        for path in FILES
        if await readable(ws, path)
        and ws.policy.decide(principal, Action.SEARCH, VPath.parse(path)).allowed
        and not path.endswith(".labels.yaml")  # sidecars label files, they are not indexed
    }
    assert hits == expected
    assert "/docs/open.md" in hits  # the test sees something: every principal reads that one


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.id)
async def test_a_sidecar_an_index_holds_is_a_hit_only_where_its_file_may_be_read(
    principal: Principal,
) -> None:
    """The index is shared: a sidecar indexed by hand (or by an older build) is decided as the
    guard decides it, hidden wherever the file it labels is (the copy in the hit checks did
    not know sidecars)."""
    shared, knowledge = await workspace()
    owner = Workspace(shared.mounts, policy=Policy.allow_all(), principal=OWNER)
    for path in ("/docs/denied.md.labels.yaml", "/docs/side.md.labels.yaml"):
        there = await owner.stat(path)  # indexed as the file is: the hit checks vouch for it
        await knowledge.index_file(path, FILES[path].encode(), labels=there.labels)
    ws = shared.with_principal(principal)
    hits = {h.path for h in (await ws.search(WORD, mode="bm25", k=100)).hits}
    assert "/docs/denied.md.labels.yaml" not in hits
    assert not await readable(ws, "/docs/denied.md.labels.yaml")


async def test_ask_cites_only_what_a_read_shows() -> None:
    shared, _ = await workspace()
    for principal in PRINCIPALS:
        ws = shared.with_principal(principal)
        answer = await ws.ask(f"where is the {WORD}?", mode="bm25", k=50, relevance_floor=None)
        for citation in answer.citations:
            assert await readable(ws, citation.path), (principal.id, citation.path)
