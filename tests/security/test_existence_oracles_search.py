"""A search or an ask aimed at a hidden thing answers as one aimed at nothing — the same hits,
the same error or none, the same record in the asker's audit view.

Red-team variants (area A) of the class *existence oracles* (``docs/security.md``). The asker
names a hidden file, a folder of hidden files, a mount hidden by its labels, a hidden document's
id, a hidden tag or section; each is compared with the same request naming something absent.
"""

from __future__ import annotations

from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.audit import MemoryAuditSink
from bastion.core.models import Labels
from bastion.core.policy import Rule
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex
from bastion.knowledge.ingest import stable_doc_id

ASKER = Principal.of("intern", clearance="internal")

SECRET = "---\nclassification: restricted\ntags: [payroll]\n---\n# Payroll\n\nSalary bands.\n"

# (hidden, absent) pairs of search arguments
PAIRS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"path": "/docs/pay.md"}, {"path": "/docs/nope.md"}),
    ({"path": "/docs/hr"}, {"path": "/docs/none"}),
    ({"path": "/docs/hr/"}, {"path": "/docs/none/"}),
    ({"path": "/vault"}, {"path": "/nomount"}),
    ({"path": "/vault/plan.md"}, {"path": "/nomount/plan.md"}),
    ({"path": "/docs/denied"}, {"path": "/docs/absent"}),
    ({"filter": {"doc_ids": [stable_doc_id("/docs/pay.md")]}}, {"filter": {"doc_ids": ["x"]}}),
    ({"filter": {"tags": ["payroll"]}}, {"filter": {"tags": ["nothing"]}}),
    ({"filter": {"section": "Payroll"}}, {"filter": {"section": "Nothing"}}),
    ({"filter": {"classifications": ["restricted"]}}, {"filter": {"classifications": ["x"]}}),
]


async def _world(index: str) -> tuple[Workspace, MemoryAuditSink]:
    audit = MemoryAuditSink()
    knowledge = Knowledge(
        PartitionedIndex(lambda name: MemoryIndex()) if index == "partitioned" else MemoryIndex()
    )
    owner = Workspace(
        [
            Mount.of("/docs", MemoryStore()),
            Mount.of("/vault", MemoryStore(), labels=Labels(classification="restricted")),
        ],
        policy=Policy(
            rules=(
                Rule.deny(["read", "search", "list"], "/docs/denied/**", principals=["intern"]),
                Rule.allow(["read", "write", "search", "list"], "/**"),
            )
        ),
        knowledge=knowledge,
        audit=audit,
        principal=Principal.of("root", clearance="restricted"),
    )
    await owner.write("/docs/open.md", "# Open\n\nSalary reviews happen in March.\n")
    await owner.write("/docs/pay.md", SECRET)
    await owner.write("/docs/hr/bands.md", SECRET)
    await owner.write("/docs/denied/notes.md", "# Notes\n\nSalary notes.\n")
    await owner.write("/vault/plan.md", "# Plan\n\nSalary plan.\n")
    return owner.with_principal(ASKER), audit


def _told(audit: MemoryAuditSink, since: int, *names: str) -> list[tuple[str, bool, str]]:
    out = []
    for r in audit.records[since:]:
        if r.principal != ASKER.id:
            continue
        said = r.reason if r.told is None else r.told
        for name in names:
            said = said.replace(name, "<P>")
        out.append((r.operation, r.allowed, said))
    return out


async def _outcome(call: Any) -> tuple[str, Any]:
    try:
        result = await call
    except Exception as exc:  # the error's kind and words are the outcome
        return type(exc).__name__, str(exc)
    return "ok", result


@pytest.mark.parametrize("index", ["memory", "partitioned"])
async def test_a_search_aimed_at_a_hidden_thing_answers_as_one_aimed_at_nothing(
    index: str,
) -> None:
    asker, audit = await _world(index)
    assert [h.path for h in (await asker.search("salary", mode="bm25")).hits] == ["/docs/open.md"]
    for hidden, absent in PAIRS:
        for query in ("salary", "salary bands", ""):
            mark = len(audit.records)
            kind_h, got_h = await _outcome(asker.search(query, mode="bm25", **hidden))
            told_h = _told(audit, mark, str(hidden.get("path", "")))
            mark = len(audit.records)
            kind_a, got_a = await _outcome(asker.search(query, mode="bm25", **absent))
            told_a = _told(audit, mark, str(absent.get("path", "")))
            assert kind_h == kind_a, (hidden, absent)
            if kind_h == "ok":
                assert got_h.hits == got_a.hits == (), (hidden, query)
            else:
                assert got_h.replace(str(hidden.get("path")), "<P>") == got_a.replace(
                    str(absent.get("path")), "<P>"
                )
            assert told_h == told_a, (hidden, absent)


@pytest.mark.parametrize("index", ["memory", "partitioned"])
async def test_an_ask_aimed_at_a_hidden_thing_answers_as_one_aimed_at_nothing(index: str) -> None:
    asker, _audit = await _world(index)
    for hidden, absent in PAIRS:
        kind_h, got_h = await _outcome(
            asker.ask("What are the salary bands?", mode="bm25", **hidden)
        )
        kind_a, got_a = await _outcome(
            asker.ask("What are the salary bands?", mode="bm25", **absent)
        )
        assert kind_h == kind_a, (hidden, absent)
        if kind_h == "ok":
            assert got_h.to_dict() == got_a.to_dict(), (hidden, absent)


async def _linked(hidden: bool) -> Workspace:
    owner = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=Principal.of("root", clearance="restricted"),
    )
    await owner.write("/docs/a.md", "# A\n\nOrbit notes; see [b](b.md).\n")
    await owner.write("/docs/b.md", "---\nrelated: [c.md]\n---\n# B\n\nBudget notes.\n")
    await owner.write("/docs/c.md", "# C\n\nCrew notes.\n")
    if hidden:
        await owner.write(
            "/docs/h.md",
            "---\nclassification: restricted\nrelated: [a.md, c.md, d.md]\nparent: b.md\n---\n"
            "# H\n\nOrbit orbit secrets; see [a](a.md) and [c](c.md).\n",
        )
        await owner.write("/docs/a.md", "# A\n\nOrbit notes; see [b](b.md).\n")  # rewritten
    return owner.with_principal(ASKER)


async def test_related_hits_are_the_same_with_and_without_a_hidden_neighbour() -> None:
    """Class: hidden documents on every read path (one hop along relations): a hidden page
    that links the hits and their neighbours adds, removes and reorders nothing."""
    alone, crowded = await _linked(False), await _linked(True)
    for query in ("orbit", "budget", "crew notes", "secrets"):
        got = (await crowded.search(query, mode="bm25", related=True)).hits
        want = (await alone.search(query, mode="bm25", related=True)).hits
        assert [(h.path, h.related_to, round(h.score, 6)) for h in got] == [
            (h.path, h.related_to, round(h.score, 6)) for h in want
        ], query


@pytest.mark.parametrize("index", ["memory", "partitioned"])
async def test_index_directory_aimed_at_a_hidden_thing_answers_as_one_aimed_at_nothing(
    index: str,
) -> None:
    """``index_directory`` of a hidden file, folder or mount fails as for an absent one, and
    tells the asker's audit view the same."""
    asker, audit = await _world(index)
    for hidden, absent in PAIRS:
        if "path" not in hidden:
            continue
        mark = len(audit.records)
        kind_h, got_h = await _outcome(asker.index_directory(hidden["path"]))
        told_h = _told(audit, mark, str(hidden["path"]).rstrip("/"))
        mark = len(audit.records)
        kind_a, got_a = await _outcome(asker.index_directory(absent["path"]))
        told_a = _told(audit, mark, str(absent["path"]).rstrip("/"))
        assert kind_h == kind_a, (hidden, absent)
        if kind_h == "ok":
            assert (got_h.indexed, got_h.outcomes) == (got_a.indexed, got_a.outcomes)
        else:
            h, a = str(hidden["path"]).rstrip("/"), str(absent["path"]).rstrip("/")
            assert got_h.replace(h, "<P>") == got_a.replace(a, "<P>"), (got_h, got_a)
        assert told_h == told_a, (hidden, absent)
