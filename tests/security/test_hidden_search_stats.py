"""Keyword statistics of hidden documents (N, df, avgdl, counts) move no visible hit's score or
rank, on every engine, with and without the caller's filters, and a search returns ``k`` hits
whenever ``k`` visible ones match.

Red-team variants (area A) of the class *hidden documents on every read path* — "search (every
mode, BM25 statistics included) ... Search results are what they would be if the hidden
documents did not exist" (``docs/security.md``). Two worlds hold the same visible files; one
also holds documents hidden from the reader five ways (classification, roles, another tenant set
by front matter, a policy rule, a blocked segment), each full of the query's words. The reader's
results must be the same in both, score for score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Rule
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex

READER = Principal.of("reader", tenant="acme", clearance="internal", roles=["eng"])

VISIBLE = {
    "/docs/a.md": "# Orbit\n\nThe orbit budget is reviewed in March.\n",
    "/docs/b.md": "---\ntags: [ops]\n---\n# Launch\n\nLaunch days: the launch window opens at dawn.\n",
    "/docs/sub/c.md": "# Notes\n\nOrbit notes, budget notes, and launch notes for the crew.\n",
    "/docs/sub/d.md": "---\ntenant: acme\nroles: [eng]\n---\n# Eng\n\nEngine budget and orbit.\n",
    "/docs/e.md": "# Misc\n\nA page about lunch, with one mention of an orbit.\n",
}
HIDDEN = {
    "/docs/h1.md": "---\nclassification: restricted\n---\n# H1\n\norbit orbit budget launch\n",
    "/docs/sub/h2.md": "---\nroles: [hr]\n---\n# H2\n\norbit budget budget notes launch\n",
    "/docs/h3.md": "---\ntenant: globex\n---\n# H3\n\norbit launch launch launch days\n",
    "/docs/denied/h4.md": "# H4\n\norbit budget notes notes days\n",
    "/docs/.git/h5.md": "# H5\n\norbit orbit orbit launch budget notes\n",
}
for _n in range(6):  # bulk, so N and avgdl move a lot when counted
    HIDDEN[f"/docs/sub/bulk{_n}.md"] = (
        "---\nclassification: confidential\ntags: [ops]\n---\n# Bulk\n\n"
        + "orbit budget launch notes " * (3 + _n)
        + "\n"
    )

POLICY = Policy(
    rules=(
        Rule.deny(["read", "search", "list"], "/docs/denied/**", principals=["reader"]),
        Rule.allow(["read", "write", "search", "list"], "/**"),
    ),
    limits=FileLimits(blocked_segments=frozenset({".git"})),
)

QUERIES = ["orbit budget", "launch", "notes days", "orbit launch budget notes", "lunch"]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"path": "/docs/sub"},
    {"filter": {"tags": ["ops"]}},
    {"filter": {"section": "Orbit"}},
    {"k": 1},
    {"k": 3, "path": "/docs"},
]

Make = Callable[[str], Knowledge]


@pytest.fixture(
    params=["memory", "partitioned", "lance", "lance-single", "postgres", "postgres-tables"]
)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    kind = str(request.param)
    made: list[Knowledge] = []

    def build(world: str) -> Knowledge:
        if kind == "memory":
            knowledge = Knowledge(MemoryIndex())
        elif kind == "partitioned":
            knowledge = Knowledge(PartitionedIndex(lambda name: MemoryIndex()))
        elif kind.startswith("lance"):
            folder = tmp_path / world
            knowledge = Knowledge.open(folder, embedder=None, partitioned=kind == "lance")
        else:
            from bastion.knowledge.index.postgres import PostgresIndex

            dsn = request.getfixturevalue("pg_dsn")
            if kind == "postgres":
                knowledge = Knowledge(PostgresIndex(dsn, table=f"w_{world}"))
            else:
                knowledge = Knowledge(
                    PartitionedIndex(lambda name: PostgresIndex(dsn, table=f"{world}_{name}"))
                )
        made.append(knowledge)
        return knowledge

    yield build
    for knowledge in made:
        knowledge.close()


async def _world(make: Make, name: str, files: dict[str, str]) -> Workspace:
    store = MemoryStore()
    for raw, text in files.items():
        path = VPath.parse(raw.removeprefix("/docs"))
        await store.makedirs(path.parent)
        await store.write(path, text.encode())
    owner = Workspace([Mount.of("/docs", store)], policy=POLICY, knowledge=make(name))
    await owner.rebuild_index()
    return owner.with_principal(READER)


def _rows(result: Any) -> list[tuple[str, int, int, float]]:
    return [(h.path, h.start_line, h.end_line, round(h.score, 4)) for h in result.hits]


async def test_hidden_documents_move_no_score_rank_or_count(make: Make) -> None:
    alone = await _world(make, "alone", VISIBLE)
    crowded = await _world(make, "crowded", {**VISIBLE, **HIDDEN})
    assert crowded._link().knowledge.index.count() > alone._link().knowledge.index.count()
    for query in QUERIES:
        for options in OPTIONS:
            want = _rows(await alone.search(query, mode="bm25", **options))
            got = _rows(await crowded.search(query, mode="bm25", **options))
            assert got == want, (query, options)
            assert not any(path.startswith(tuple(HIDDEN)) for path, *_ in got)


async def test_k_visible_hits_come_back_however_many_hidden_ones_score_higher(make: Make) -> None:
    crowded = await _world(make, "k", {**VISIBLE, **HIDDEN})
    for k in (1, 2, 4):
        hits = (await crowded.search("orbit", mode="bm25", k=k)).hits
        assert len(hits) == k
        assert all(h.path in VISIBLE for h in hits)
