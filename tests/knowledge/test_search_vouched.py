"""A search vouches for each hit's file: still the version it was indexed from, with the same
labels. On a store that knows when anything in it changed (``Store.change_mark``), a file
found current is not looked at again until something in its store changes, by whatever
writer; a store without a mark is looked at every time. Either way no hit outlives its file."""

from __future__ import annotations

from pathlib import Path

from search_support import CountingStore, hit_paths

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge

P = VPath.parse
READER = Principal.of("reader", clearance="internal")


def _workspace(store: MemoryStore | LocalStore) -> Workspace:
    admin = Principal.of("admin", clearance="restricted")
    return Workspace(
        [Mount.of("/docs", store)],
        policy=Policy.allow_all(),
        knowledge=Knowledge(),
        principal=admin,
    )


async def test_a_file_found_current_is_not_looked_at_again_until_its_store_changes() -> None:
    store = CountingStore()
    ws = _workspace(store)
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    await ws.write("/docs/b.md", "# B\n\nalpha and bravo\n")
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md", "/docs/b.md"]
    before = store.stats
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md", "/docs/b.md"]
    assert store.stats == before  # vouched for: no stat
    # Any change in the store, even to an unrelated file by another writer, ends the vouching.
    await store.write(P("/unrelated.txt"), b"x")
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md", "/docs/b.md"]
    assert store.stats > before


async def test_a_file_rewritten_behind_the_index_after_a_search_is_caught() -> None:
    store = MemoryStore()
    ws = _workspace(store)
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md"]
    await store.write(P("/a.md"), b"# A\n\nbravo only\n")  # straight to the store
    assert hit_paths(await ws.search("alpha", mode="bm25")) == []
    assert hit_paths(await ws.search("bravo", mode="bm25")) == ["/docs/a.md"]


async def test_a_sidecar_written_behind_the_index_after_a_search_hides_the_hit_at_once() -> None:
    store = MemoryStore()
    ws = _workspace(store)
    reader = ws.with_principal(READER)
    await ws.write("/docs/plan.txt", "launch plan for orbit\n")
    assert hit_paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.txt"]
    assert hit_paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.txt"]  # vouched
    await store.write(P("/plan.txt.labels.yaml"), b"classification: confidential\n")
    # no reindex: the next search sees the new label before it shows anything
    assert hit_paths(await reader.search("orbit", mode="bm25")) == []
    hits = (await ws.search("orbit", mode="bm25")).hits
    assert [h.labels.classification for h in hits] == ["confidential"]


async def test_a_file_moved_or_deleted_behind_the_index_after_a_search_is_dropped() -> None:
    store = MemoryStore()
    ws = _workspace(store)
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    await ws.write("/docs/b.md", "# B\n\nalpha again\n")
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md", "/docs/b.md"]
    await store.rename(P("/a.md"), P("/z.md"))
    await store.delete(P("/b.md"))
    assert hit_paths(await ws.search("alpha", mode="bm25")) == []


async def test_a_store_without_a_mark_is_looked_at_on_every_search(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert store.change_mark() is None  # other processes write to a disk
    ws = _workspace(store)
    await ws.write("/docs/a.md", "# A\n\nalpha notes\n")
    assert hit_paths(await ws.search("alpha", mode="bm25")) == ["/docs/a.md"]
    (tmp_path / "a.md").write_text("# A\n\nbravo only\n")  # another process
    assert hit_paths(await ws.search("alpha", mode="bm25")) == []
    assert hit_paths(await ws.search("bravo", mode="bm25")) == ["/docs/a.md"]


async def test_every_change_moves_the_memory_stores_mark() -> None:
    store = MemoryStore()
    marks = [store.change_mark()]
    await store.write(P("/a.md"), b"a")
    marks.append(store.change_mark())
    await store.mkdir(P("/d"))
    marks.append(store.change_mark())
    await store.rename(P("/a.md"), P("/d/a.md"))
    marks.append(store.change_mark())
    await store.copy_file(P("/d/a.md"), P("/b.md"))
    marks.append(store.change_mark())
    await store.delete(P("/d"), recursive=True)
    marks.append(store.change_mark())
    assert len(set(marks)) == len(marks)
    await store.stat(P("/b.md"))
    await store.read_all(P("/b.md"))
    assert store.change_mark() == marks[-1]  # reading changes nothing
