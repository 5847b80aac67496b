"""The shortcuts of a search whose hits are all vouched for (issue 15, "Speed").

A principal view remembers, per document object, that its principal may read it and the
change mark its file was vouched for under (``SearchView.cleared``); a hit is shown from that
memory only while its store's mark is the same. These tests hold the shortcut to the answers
the full check gives: the principal's post-check, a write behind the index after a search
that used the memory, a mark per mount, the access filter of the whole tree kept apart from a
folder's, and hits equal to the ones the file check builds. The index-side shortcuts (the
listing of tables skipped while unchanged, the last filter's mask kept by identity) are
checked against new tables and new chunks."""

from __future__ import annotations

import pytest
from index_contract import chunk, meta
from search_support import CountingStore, hit_paths

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import StoreError
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexFilter
from bastion.knowledge.index.partitioned import PartitionedIndex

P = VPath.parse
ADMIN = Principal.of("admin", clearance="restricted")
READER = Principal.of("reader", clearance="internal")


class FilterBlindIndex(MemoryIndex):
    """An index whose keyword search ignores the access filter (a bug inside an index): the
    workspace's post-check of each hit is then all that stands between a hit and a reader."""

    def search_keyword(self, query, k, flt=None, *, statistics=None):  # type: ignore[no-untyped-def]
        return super().search_keyword(query, k, None, statistics=statistics)


def _workspace(*stores: tuple[str, MemoryStore]) -> Workspace:
    return Workspace(
        [Mount.of(prefix, store) for prefix, store in stores],
        policy=Policy.allow_all(),
        knowledge=Knowledge(),
        principal=ADMIN,
    )


async def test_a_hit_vouched_for_by_another_view_still_passes_this_principals_check() -> None:
    store = CountingStore()
    ws = _workspace(("/docs", store))
    await ws.write("/docs/open.md", "orbit notes for all\n")
    await ws.write("/docs/secret.md", "---\nclassification: confidential\n---\norbit plan\n")
    assert hit_paths(await ws.search("orbit", mode="bm25")) == ["/docs/open.md", "/docs/secret.md"]
    assert hit_paths(await ws.search("orbit", mode="bm25")) == ["/docs/open.md", "/docs/secret.md"]
    before = store.stats
    reader = ws.with_principal(READER)
    for _ in range(3):  # the first from the admin's vouching, then from its own memory
        assert hit_paths(await reader.search("orbit", mode="bm25")) == ["/docs/open.md"]
    assert store.stats == before  # vouched for: no file looked at, and still no secret


async def test_the_post_check_stands_when_the_index_ignores_the_filter() -> None:
    store = CountingStore()
    ws = Workspace(
        [Mount.of("/docs", store)],
        policy=Policy.allow_all(),
        knowledge=Knowledge(FilterBlindIndex()),
        principal=ADMIN,
    )
    await ws.write("/docs/open.md", "orbit notes for all\n")
    await ws.write("/docs/secret.md", "---\nclassification: confidential\n---\norbit plan\n")
    for _ in range(2):  # the admin's searches vouch for both files
        assert hit_paths(await ws.search("orbit", mode="bm25")) == [
            "/docs/open.md",
            "/docs/secret.md",
        ]
    reader = ws.with_principal(READER)
    for _ in range(3):
        assert hit_paths(await reader.search("orbit", mode="bm25")) == ["/docs/open.md"]


async def test_a_write_behind_the_index_after_searches_from_memory_is_seen() -> None:
    store = CountingStore()
    ws = _workspace(("/docs", store))
    reader = ws.with_principal(READER)
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    await ws.write("/docs/b.md", "# B\n\nalpha again\n")
    await ws.write("/docs/c.md", "# C\n\nalpha too\n")
    for _ in range(3):
        assert hit_paths(await reader.search("alpha", mode="bm25")) == [
            "/docs/a.md",
            "/docs/b.md",
            "/docs/c.md",
        ]
    before = store.stats
    await store.write(P("/a.md"), b"# A\n\nbravo only\n")  # content, straight to the store
    await store.write(P("/b.md.labels.yaml"), b"classification: confidential\n")  # labels
    await store.rename(P("/c.md"), P("/z.md"))  # moved
    assert hit_paths(await reader.search("alpha", mode="bm25")) == []
    assert store.stats > before
    assert hit_paths(await reader.search("bravo", mode="bm25")) == ["/docs/a.md"]
    await store.delete(P("/a.md"))
    assert hit_paths(await reader.search("bravo", mode="bm25")) == []


async def test_a_change_ends_the_vouching_then_one_look_vouches_again() -> None:
    store = CountingStore()
    ws = _workspace(("/docs", store))
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    await ws.search("alpha", mode="bm25")
    await ws.search("alpha", mode="bm25")
    start = store.stats
    await store.write(P("/unrelated.txt"), b"x")  # any change moves the mark
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md"]
    looked = store.stats
    assert looked > start  # the file was looked at under the new mark
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md"]
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md"]
    assert store.stats == looked  # and vouched for again under it


async def test_each_mount_is_vouched_for_under_its_own_stores_mark() -> None:
    one, two = CountingStore(), CountingStore()
    ws = _workspace(("/one", one), ("/two", two))
    for name in ("a", "b"):
        await ws.write(f"/one/{name}.md", f"# {name}\n\ndelta one {name}\n")
        await ws.write(f"/two/{name}.md", f"# {name}\n\ndelta two {name}\n")
    every = ["/one/a.md", "/one/b.md", "/two/a.md", "/two/b.md"]
    assert hit_paths(await ws.search("delta", mode="bm25")) == every
    assert hit_paths(await ws.search("delta", mode="bm25")) == every
    seen_one, seen_two = one.stats, two.stats
    await two.write(P("/b.md"), b"# b\n\necho only\n")  # behind the index, second mount
    assert hit_paths(await ws.search("delta", mode="bm25")) == [
        "/one/a.md",
        "/one/b.md",
        "/two/a.md",
    ]
    assert one.stats == seen_one  # its mark did not move: nothing there looked at
    assert two.stats > seen_two


async def test_hits_from_memory_equal_the_hits_the_file_check_builds() -> None:
    store = MemoryStore()
    ws = _workspace(("/docs", store))
    long = " ".join(f"word{i}" for i in range(200))
    await ws.write("/docs/long.md", f"# Long\n\n## Part\n\nkilo {long}\n")
    await ws.write("/docs/short.md", "kilo lima\n")
    for query, min_score in (("kilo", None), ("kilo lima", 0.0), ("kilo", 1e9)):
        first = await ws.search(query, mode="bm25", min_score=min_score)  # files looked at
        again = await ws.search(query, mode="bm25", min_score=min_score)  # from memory
        assert again.hits == first.hits
        assert all(len(hit.snippet) <= 300 for hit in again.hits)
        await store.write(P(f"/other-{len(query)}.txt"), b"x")  # the next one looks again


async def test_a_folder_search_does_not_use_the_whole_trees_filter() -> None:
    ws = _workspace(("/docs", MemoryStore()))
    await ws.write("/docs/a/one.md", "mike notes\n")
    await ws.write("/docs/b/two.md", "mike notes\n")
    assert hit_paths(await ws.search("mike", mode="bm25")) == ["/docs/a/one.md", "/docs/b/two.md"]
    assert hit_paths(await ws.search("mike", mode="bm25", path="/docs/a")) == ["/docs/a/one.md"]
    assert hit_paths(await ws.search("mike", mode="bm25", filter={"tags": ["none"]})) == []
    assert hit_paths(await ws.search("mike", mode="bm25")) == ["/docs/a/one.md", "/docs/b/two.md"]


def test_a_table_made_after_an_unchanged_listing_is_still_found() -> None:
    made: list[str] = []
    listing: list[tuple[str, ...]] = [("chunks__tenant_shared__src_a",)]

    def factory(name: str) -> MemoryIndex:
        made.append(name)
        return MemoryIndex()

    index = PartitionedIndex(factory, discover=lambda: listing[0])
    index.refresh()
    index.refresh()  # the same tuple: nothing new
    assert made == ["chunks__tenant_shared__src_a"]
    listing[0] = (*listing[0], "chunks__tenant_shared__src_b")
    index.refresh()
    assert made == ["chunks__tenant_shared__src_a", "chunks__tenant_shared__src_b"]
    listing[0] = list(listing[0])  # type: ignore[assignment]  # any other iterable: always looked at
    index.refresh()
    assert len(made) == 2


def test_the_last_filters_mask_follows_new_and_removed_chunks() -> None:
    index = MemoryIndex()
    index.upsert([chunk("a1", meta("da", path="/x/a.md"), "november notes")])
    flt = IndexFilter(path_prefix="/x")
    assert [h.chunk.chunk_id for h in index.search_keyword("november", 10, flt)] == ["a1"]
    index.upsert([chunk("b1", meta("db", path="/x/b.md"), "november again")])
    index.upsert([chunk("c1", meta("dc", path="/y/c.md"), "november elsewhere")])
    found = {h.chunk.chunk_id for h in index.search_keyword("november", 10, flt)}
    assert found == {"a1", "b1"}
    index.delete_documents(["da"])
    assert [h.chunk.chunk_id for h in index.search_keyword("november", 10, flt)] == ["b1"]
    index.clear()
    assert index.search_keyword("november", 10, flt) == []


def test_a_table_is_announced_before_this_process_first_writes_to_it() -> None:
    events: list[tuple[str, str]] = []

    class Recording(MemoryIndex):
        def upsert(self, chunks):  # type: ignore[no-untyped-def]
            events.append(("write", chunks[0].chunk_id))
            super().upsert(chunks)

    empty = "chunks__tenant_shared__src_docs"  # on disk, empty: its maker died before writing
    index = PartitionedIndex(
        lambda name: Recording(),
        discover=lambda: (empty,),
        announce=lambda name: events.append(("announce", name)),
    )
    index.refresh()
    assert events == []  # opening a table found on disk announces nothing
    index.upsert([chunk("a1", meta("da", path="/docs/a.md"), "x")])
    index.upsert([chunk("a2", meta("da", path="/docs/a.md"), "y")])
    index.upsert([chunk("b1", meta("db", path="/other/b.md"), "z")])  # a new table
    assert events == [
        ("announce", empty),
        ("write", "a1"),
        ("write", "a2"),
        ("announce", "chunks__tenant_shared__src_other"),
        ("write", "b1"),
    ]


def test_a_table_whose_announcement_failed_is_not_written_and_is_told_again() -> None:
    told: list[str] = []
    failing = [True]

    def announce(name: str) -> None:
        if failing[0]:
            raise StoreError("cannot write to the index tables (disk full)")
        told.append(name)

    index = PartitionedIndex(lambda name: MemoryIndex(), discover=lambda: (), announce=announce)
    with pytest.raises(StoreError):
        index.upsert([chunk("a1", meta("da", path="/docs/a.md"), "x")])
    assert index.count() == 0  # nothing went where nobody would look
    failing[0] = False
    index.upsert([chunk("a1", meta("da", path="/docs/a.md"), "x")])
    assert told == ["chunks__tenant_shared__src_docs"]
    assert index.count() == 1
