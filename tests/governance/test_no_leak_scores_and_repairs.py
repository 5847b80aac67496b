"""Hidden documents move no keyword score, and an index repair run from a principal's view
reports nothing hidden (leaks found by ``test_no_leak_randomized.py``, one focused test each).

Keyword scores counted hidden documents. BM25 weighs a term by its document frequency
(``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), and the in-memory index computed ``N``, ``df``
and the average length over every live chunk, hidden ones included; the access filter only
zeroed the hidden chunks' own scores afterwards. So the score of a document the asker *may*
read moved with the number of documents it may *not* read that contain the same word: whoever
can write one file learns, one search at a time, whether any word appears in documents hidden
from them (another tenant's with the default ``Knowledge()`` index, a higher classification's
within a tenant with the partitioned one). The tests compare the scores a principal gets with
and without the hidden documents.

Index repair reports hidden files. ``reindex()`` and ``rebuild_index()`` read as the system
(``docs/decisions/``), and a view bound to any principal may call them: the summary it
returns counts every file of every mount and names the files it skipped, another tenant's
included. Refusing the call for that principal, or reporting only what it may see, closes it;
the test accepts either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bastion import (
    AccessDeniedError,
    Labels,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    SyncWorkspace,
    Workspace,
)
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex
from bastion.knowledge.index.port import Index

ACME_BOSS = Principal.of("boss", tenant="acme", clearance="restricted")
ACME_CLERK = Principal.of("clerk", tenant="acme", clearance="public")
GLOBEX = Principal.of("spy", tenant="globex", clearance="restricted")
SECRET = "---\nclassification: restricted\n---\n# Heron\n\nProject heron acquisition terms.\n"


def _workspace(index: Index, acme: MemoryStore | None = None) -> SyncWorkspace:
    return Workspace(
        [
            Mount.of("/acme", acme or MemoryStore(), labels=Labels(tenant="acme")),
            Mount.of("/globex", MemoryStore(), labels=Labels(tenant="globex")),
        ],
        policy=Policy.allow_all(),
        knowledge=Knowledge(index, embedder=None),
    ).sync()


def _probe_scores(
    index: Callable[[], Index], asker: Principal, probe: str, hidden: int
) -> list[tuple[str, float]]:
    """What ``asker`` gets for ``heron`` after writing ``probe``, with ``hidden`` acme
    documents it may not read that mention heron."""
    ws = _workspace(index())
    boss = ws.with_principal(ACME_BOSS)
    boss.write("/acme/lunch.md", "# Lunch\n\nThe canteen opens at noon.\n")
    for i in range(hidden):
        boss.write(f"/acme/deals/heron-{i}.md", SECRET)
    own = ws.with_principal(asker)
    own.write(probe, "# Probe\n\nheron sightings by the river\n")
    return [(h.path, h.score) for h in own.search("heron", mode="bm25").hits]


def test_another_tenants_documents_do_not_move_keyword_scores() -> None:
    """The default ``Knowledge()`` index: a globex user's score for its own probe file tells
    how many acme documents mention the word."""
    alone = _probe_scores(MemoryIndex, GLOBEX, "/globex/probe.md", hidden=0)
    assert [path for path, _ in alone] == ["/globex/probe.md"]
    for hidden in (1, 3):
        seen = _probe_scores(MemoryIndex, GLOBEX, "/globex/probe.md", hidden=hidden)
        assert seen == alone, f"{hidden} hidden acme documents changed the score: {seen}"


def test_documents_above_the_askers_clearance_do_not_move_keyword_scores() -> None:
    """The partitioned index keeps statistics per tenant and source: within a tenant, a
    public-cleared user's score tells how many restricted documents mention the word."""

    def partitioned() -> Index:
        return PartitionedIndex(lambda name: MemoryIndex())

    alone = _probe_scores(partitioned, ACME_CLERK, "/acme/probe.md", hidden=0)
    assert [path for path, _ in alone] == ["/acme/probe.md"]
    for hidden in (1, 3):
        seen = _probe_scores(partitioned, ACME_CLERK, "/acme/probe.md", hidden=hidden)
        assert seen == alone, f"{hidden} restricted documents changed the score: {seen}"


def test_an_index_repair_run_from_a_principals_view_reports_nothing_hidden() -> None:
    """A globex view's ``reindex()`` / ``rebuild_index()`` summary named acme's files
    (``skipped /acme/deals/heron-logo.png: unsupported type``) and counted them."""
    acme = MemoryStore()
    ws = _workspace(MemoryIndex(), acme)
    boss = ws.with_principal(ACME_BOSS)
    boss.write("/acme/deals/heron.md", SECRET)
    boss.write("/acme/deals/heron-logo.png", b"\x89PNG\r\n\x1a\n" + bytes(32))
    spy = ws.with_principal(GLOBEX)
    spy.write("/globex/notes.md", "# Notes\n\nour own notes\n")
    for n, run in enumerate((spy.reindex, spy.rebuild_index)):
        late = VPath.parse(f"/deals/heron-late-{n}.md")  # written behind the index
        asyncio.run(acme.write(late, SECRET.encode()))
        try:
            summary = run()
        except AccessDeniedError:
            continue  # refusing index repair to this principal closes the leak too
        shown = summary.format()
        assert "/acme" not in shown and "heron" not in shown, shown
        counted = summary.indexed + summary.unchanged + len(summary.skipped) + summary.removed
        assert counted <= 1, f"counted {counted} files, globex may see 1: {shown}"
