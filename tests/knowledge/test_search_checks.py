"""The per-hit file checks of ``Workspace.search``: concurrent on a store that waits (one after
the other on one that answers at once, which the rest of the suite runs on), and the guard's
answer the same either way; the index's look for new tables lists the folder again only when
a table was announced in its journal."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge, _Tables
from bastion.knowledge.index.memory import MemoryIndex

DOCS = {f"/docs/note{i}.md": f"# Note {i}\n\nThe billing service, part {i}.\n" for i in range(6)}


class _Counting(MemoryStore):
    """A memory store whose ``stat`` waits ``delay`` seconds (as a server's does), counting the
    stats in flight at once."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.in_flight = 0
        self.most = 0

    async def stat(self, path: VPath) -> FileInfo:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return await super().stat(path)
        finally:
            self.in_flight -= 1


async def _workspace(store: MemoryStore) -> Workspace:
    owner = Workspace(
        [Mount.of("/docs", store, "read_write")],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex(), embedder=None),
    )
    for path, text in DOCS.items():
        await owner.write(path, text)
    return owner


async def test_a_store_that_waits_is_checked_concurrently() -> None:
    store = _Counting(delay=0.003)
    agent = (await _workspace(store)).with_principal(Principal.of("agent"))
    store.most = 0
    for _ in range(2):  # the first search finds that the store waits
        result = await agent.search("billing", mode="bm25", k=10)
        assert len(result.hits) == len(DOCS)
    assert store.most > 1


async def test_concurrent_checks_still_drop_a_file_relabelled_out_of_band() -> None:
    store = _Counting(delay=0.003)
    owner = await _workspace(store)
    agent = owner.with_principal(Principal.of("agent", roles={"staff"}))
    await agent.search("billing", mode="bm25", k=10)  # learns that the store waits
    # another process relabels two files straight in the store: the index still holds them
    for name in ("note1.md", "note4.md"):
        await store.write(VPath.parse(f"/{name}"), b"---\nroles: [hr]\n---\n# Pay\n\nbilling\n")
    result = await agent.search("billing", mode="bm25", k=10)
    assert store.most > 1
    paths = {h.path for h in result.hits}
    assert paths == set(DOCS) - {"/docs/note1.md", "/docs/note4.md"}
    hr = owner.with_principal(Principal.of("clerk", roles={"hr"}))
    found = {h.path for h in (await hr.search("billing", mode="bm25", k=10)).hits}
    assert {"/docs/note1.md", "/docs/note4.md"} <= found


def test_tables_are_listed_again_when_one_is_announced(tmp_path: Path) -> None:
    tables = _Tables(tmp_path)
    (tmp_path / "chunks__a").mkdir()
    first = tables()
    assert first == ("chunks__a",)
    (tmp_path / "note.txt").write_text("not a table")
    assert tables() is first  # nothing announced: the same listing, not looked at again
    (tmp_path / "chunks__b").mkdir()
    tables.announce("chunks__b")  # as a writer does before its first write to a table
    assert tables() == ("chunks__a", "chunks__b")
    tables.close()


def test_another_process_announcing_a_table_is_heard_through_the_journal(tmp_path: Path) -> None:
    mine, theirs = _Tables(tmp_path), _Tables(tmp_path)  # two openers of one index folder
    assert mine() == ()
    (tmp_path / "chunks__a").mkdir()
    theirs.announce("chunks__a")
    assert mine() == ("chunks__a",)
    assert mine() == ("chunks__a",)
    mine.close()
    theirs.close()
