"""A hybrid search on an embedded index that fetches its texts fetches the texts of the fused
top k only, once, and returns what fusing fully-texted candidate lists returns.

Fetches are counted at the index's own fetch (``LanceIndex.fetch_texts``, the seam a search
reaches its table through); the table is a real LanceDB table."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from index_contract import DIM, chunk, ids, meta, random_unit

from bastion.knowledge.embedders.hashing import HashingEmbedder
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index import fusion
from bastion.knowledge.index.hybrid import hybrid
from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.memory import TextRef
from bastion.knowledge.index.models import IndexedChunk, IndexHit

EMBEDDER = "bastion/hashing-8"
WORDS = ["apple", "banana", "cherry", "plum", "pear", "fig", "lime", "kiwi"]


class CountingLance(LanceIndex):
    """A LanceIndex that records the chunk ids of each fetch of texts."""

    def __init__(self, folder: Path, *, keep_texts: bool) -> None:
        super().__init__(folder, dim=DIM, embedder=EMBEDDER, keep_texts=keep_texts)
        self.fetched: list[list[str]] = []

    def fetch_texts(
        self, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> list[IndexedChunk | None]:
        self.fetched.append([c.chunk_id for c in chunks])
        return super().fetch_texts(chunks, refs)


def _fill(folder: Path) -> None:
    index = LanceIndex(folder, dim=DIM, embedder=EMBEDDER, keep_texts=True)
    written = []
    for d in range(12):
        words = " ".join(WORDS[(d + i) % len(WORDS)] for i in range(1 + d % 4))
        for s in range(3):
            cid = f"d{d}c{s}"
            written.append(chunk(cid, meta(f"d{d}"), f"{words} part {s} of {d}", seq=s))
    index.upsert([c for c in written])
    index.close()


def _rows(hits: list[IndexHit]) -> list[tuple[str, float, str, int, int]]:
    return [
        (h.chunk.chunk_id, h.score, h.chunk.text, h.chunk.start_line, h.chunk.end_line)
        for h in hits
    ]


def _queries() -> list[tuple[str, np.ndarray]]:
    return [(f"{a} {b}", random_unit(f"q{a}{b}")) for a in WORDS[:4] for b in WORDS[4:]]


def test_only_the_fused_top_k_is_fetched_once_and_the_hits_are_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _fill(folder)
    fetching = CountingLance(folder, keep_texts=False)
    keeping = CountingLance(folder, keep_texts=True)
    for query, vector in _queries():
        fetching.fetched.clear()
        got = hybrid(fetching, query, vector, k=4, depth=20, fuse=fusion.zscore)
        assert fetching.fetched == [ids(got)]  # one fetch, of exactly the hits returned
        full = fusion.zscore(keeping.search_keyword(query, 20), keeping.search_vector(vector, 20))
        assert _rows(got) == _rows(full[:4])
        assert all(h.chunk.text for h in got)
    assert keeping.fetched == []  # an index that keeps its texts never fetches


def test_a_direct_search_still_fetches_its_own_hits(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _fill(folder)
    index = CountingLance(folder, keep_texts=False)
    hits = index.search_keyword("apple", 5)
    assert index.fetched == [ids(hits)] and all(h.chunk.text for h in hits)


def test_knowledge_search_fetches_the_fused_hits_only(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _fill(folder)
    index = CountingLance(folder, keep_texts=False)
    kb = Knowledge(index, embedder=HashingEmbedder(DIM))
    hits = asyncio.run(kb.search("apple plum", mode="hybrid", k=3))
    assert len(hits) == 3 and index.fetched == [ids(hits)]


def test_a_fused_hit_rewritten_since_scoring_gives_its_place_to_the_next(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _fill(folder)
    mine = CountingLance(folder, keep_texts=False)
    keeping = CountingLance(folder, keep_texts=True)  # scores what mine scores, texts in hand
    query, vector = "apple banana", random_unit("qx")
    top = hybrid(mine, query, vector, k=3, depth=20, fuse=fusion.zscore)[0].chunk
    # another process rewrites the top hit's document; a write of mine moves my table handle
    # to the latest version while my mirror still scores the old one
    other = LanceIndex(folder, dim=DIM, embedder=EMBEDDER, keep_texts=False)
    other.replace_document(top.doc.doc_id, [chunk(top.chunk_id, top.doc, "rewritten text")])
    for index in (mine, keeping):
        index.upsert([chunk("z0", meta("z"), "unrelated words")])
    mine.fetched.clear()
    after = hybrid(mine, query, vector, k=3, depth=20, fuse=fusion.zscore)
    full = fusion.zscore(keeping.search_keyword(query, 20), keeping.search_vector(vector, 20))
    current = [h for h in full if h.chunk.doc.doc_id != top.doc.doc_id]  # its old chunks went
    assert _rows(after) == _rows(current[:3])
    assert mine.fetched[0] == ids(full[:3]) and len(mine.fetched) >= 2
    assert sum(map(len, mine.fetched)) == len(full[: full.index(current[2]) + 1])
