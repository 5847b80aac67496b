"""Keyword scores compare across the tables of a partitioned index (one per tenant and source):
the statistics are summed over every table a search visits, each counting only what the
search's filter admits, so a hidden document moves no score, in memory and in PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from index_contract import chunk, meta

from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexedChunk, IndexFilter
from bastion.knowledge.index.partitioned import PartitionedIndex
from bastion.knowledge.index.port import Index

Factory = Callable[[str], Index]
Tables = Callable[[str], Factory]
"""A world's name -> the factory of its tables (two worlds in one test keep apart)."""

LEAVE = chunk(
    "leave",
    meta("leave", path="/handbook/leave.md", tenant="acme"),
    "Leave: 25 days a year; carry over 5 days; sick days are 10 days; parental days are 90 "
    "days; notice is 14 days; unpaid days up to 30 days.",
)
HANDBOOK = [  # the rest of the handbook also speaks of days: "days" is common in this table
    chunk(f"h{n}", meta(f"h{n}", path=f"/handbook/h{n}.md", tenant="acme"), text)
    for n, text in enumerate(
        [
            "Expenses are refunded within 30 days.",
            "Laptops are replaced every 1,000 days.",
            "Reviews happen twice a year, a few days after the quarter closes.",
            "Badges expire after 365 days.",
        ]
    )
]
LICENCE = chunk(
    "licence",
    meta("licence", path="/legal/licence.md", tenant="acme"),
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
    "software, to deal in the software without restriction; the licence ends 30 days after "
    "notice.",
)
LEGAL = [
    chunk(f"l{n}", meta(f"l{n}", path=f"/legal/l{n}.md", tenant="acme"), text)
    for n, text in enumerate(
        [
            "The software is provided as is, without warranty of any kind.",
            "The above copyright notice shall be included in all copies.",
        ]
    )
]
VISIBLE = [LEAVE, *HANDBOOK, LICENCE, *LEGAL]


def _memory(world: str) -> Factory:
    return lambda table: MemoryIndex()


@pytest.fixture(params=["memory", "postgres"])
def tables(request: pytest.FixtureRequest) -> Iterator[Tables]:
    if request.param == "memory":
        yield _memory
        return
    from bastion.knowledge.index.postgres import PostgresIndex

    dsn = request.getfixturevalue("pg_dsn")
    opened: list[PostgresIndex] = []

    def world(name: str) -> Factory:
        def postgres(table: str) -> Index:
            opened.append(PostgresIndex(dsn, table=f"{name}_{table}"))
            return opened[-1]

        return postgres

    yield world
    for index in opened:
        index.close()


def _scores(index: Index, query: str, flt: IndexFilter | None = None) -> dict[str, float]:
    return {h.chunk.chunk_id: round(h.score, 5) for h in index.search_keyword(query, 20, flt)}


def test_a_file_that_says_days_eight_times_outranks_one_that_says_it_once(
    tables: Tables,
) -> None:
    """Issue 12's example. Alone, each table ranks with its own statistics: "days" is rare
    among the legal texts, common in the handbook, so the licence's one mention would outscore
    the leave policy's eight. Searched together, they share one scale."""
    index = PartitionedIndex(tables("one"))
    index.upsert(VISIBLE)
    assert len(index.tables()) == 2
    hits = index.search_keyword("days", 10)
    assert hits[0].chunk.chunk_id == "leave"
    assert {h.chunk.chunk_id for h in hits} == {"leave", "licence", "h0", "h1", "h2", "h3"}
    # what the per-table statistics gave (and what one table alone still gives)
    handbook, legal = MemoryIndex(), MemoryIndex()
    handbook.upsert([LEAVE, *HANDBOOK])
    legal.upsert([LICENCE, *LEGAL])
    assert legal.search_keyword("days", 1)[0].score > handbook.search_keyword("days", 1)[0].score
    # one scale: the scores of one index holding everything
    one = MemoryIndex()
    one.upsert(VISIBLE)
    assert _scores(index, "days notice software") == pytest.approx(
        _scores(one, "days notice software"), rel=1e-4
    )


HIDDEN: list[IndexedChunk] = [
    # another tenant's table
    chunk("g1", meta("g1", path="/handbook/g.md", tenant="globex"), "days days days notice"),
    # the same tenant, above the asker's clearance, in a table the asker searches
    chunk(
        "s1",
        meta("s1", path="/legal/secret.md", tenant="acme", classification="restricted"),
        "days notice software days",
    ),
    # the same tenant, a role the asker lacks, in a table of its own
    chunk(
        "b1",
        meta("b1", path="/board/minutes.md", tenant="acme", roles=frozenset({"board"})),
        "the board met for two days; software notice",
    ),
]
ASKER = IndexFilter(
    tenant="acme", classifications=frozenset({"public"}), roles=frozenset({"staff"})
)


@pytest.mark.parametrize("query", ["days", "days notice software", "board software"])
def test_hidden_documents_do_not_move_the_scores(tables: Tables, query: str) -> None:
    """The asker's scores with the hidden documents indexed equal its scores in a world
    where they were never written: every table counts only what the filter admits."""
    alone = PartitionedIndex(tables("alone"))
    alone.upsert(VISIBLE)
    full = PartitionedIndex(tables("full"))
    full.upsert([*VISIBLE, *HIDDEN])
    got = _scores(full, query, ASKER)
    assert got == _scores(alone, query, ASKER)
    assert not {"g1", "s1", "b1"} & set(got)
    assert full.keyword_statistics(query, ASKER) == alone.keyword_statistics(query, ASKER)
    # and the hidden documents are there: an asker who may see them gets other scores
    boss = IndexFilter(tenant="acme", roles=frozenset({"board"}))
    assert _scores(full, query, boss) != _scores(alone, query, boss)


def test_through_a_workspace_on_the_embedded_tables(tmp_path: Path) -> None:
    """Issue 12's example end to end: ``Knowledge.open`` keeps /handbook and /legal in two
    LanceDB tables, and the leave policy still comes first for "days"; a restricted file in
    the legal table, hidden from the asker, changes none of its scores."""
    from bastion import Labels, MemoryStore, Mount, Policy, Principal, Workspace
    from bastion.knowledge.engine import Knowledge

    def world(folder: Path, hidden: bool) -> list[tuple[str, float]]:
        ws = Workspace(
            [
                Mount.of("/handbook", MemoryStore(), labels=Labels(tenant="acme")),
                Mount.of("/legal", MemoryStore(), labels=Labels(tenant="acme")),
            ],
            policy=Policy.allow_all(),
            knowledge=Knowledge.open(folder, embedder=None),
        ).sync()
        boss = ws.with_principal(Principal.of("boss", tenant="acme", clearance="restricted"))
        for c in VISIBLE:
            boss.write(c.doc.path, f"# {c.doc.doc_id}\n\n{c.text}\n")
        if hidden:
            boss.write(
                "/legal/secret.md",
                "---\nclassification: restricted\n---\n# Secret\n\ndays days days notice\n",
            )
        clerk = ws.with_principal(Principal.of("clerk", tenant="acme", clearance="public"))
        return [(h.path, round(h.score, 4)) for h in clerk.search("days", mode="bm25").hits]

    alone = world(tmp_path / "alone", hidden=False)
    assert alone[0][0] == "/handbook/leave.md"
    assert "/legal/licence.md" in [path for path, _ in alone]
    assert world(tmp_path / "full", hidden=True) == alone
