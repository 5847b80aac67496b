"""Leaks found by the randomized no-leak work (``test_no_leak_randomized.py``), one focused test
each.

Keyword scores count hidden documents. BM25 weighs a term by its document frequency over
the whole index (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), and the in-memory index
computes ``N``, ``df`` and the average length over every live chunk, hidden ones included;
the access filter only zeroes the hidden chunks' own scores afterwards. So the score of a
document the asker *may* read moves with the number of documents it may *not* read that
contain the same word. Whoever can write one file learns, one search at a time, whether (and
in how many chunks) any word appears in documents hidden from them: another tenant's with the
default ``Knowledge()`` index, a higher classification's within a tenant with the partitioned
one (whose statistics are per tenant and source, not per principal). Nothing but the score
changes; the test compares the scores a principal gets with and without the hidden documents.
"""

from __future__ import annotations

from collections.abc import Callable

from bastion import Labels, MemoryStore, Mount, Policy, Principal, SyncWorkspace, Workspace
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.partitioned import PartitionedIndex
from bastion.knowledge.index.port import Index
from bastion.knowledge.service import Knowledge

ACME_BOSS = Principal.of("boss", tenant="acme", clearance="restricted")
ACME_CLERK = Principal.of("clerk", tenant="acme", clearance="public")
GLOBEX = Principal.of("spy", tenant="globex", clearance="restricted")
SECRET = "---\nclassification: restricted\n---\n# Heron\n\nProject heron acquisition terms.\n"


def _workspace(index: Index) -> SyncWorkspace:
    return Workspace(
        [
            Mount.of("/acme", MemoryStore(), labels=Labels(tenant="acme")),
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
