"""LanceIndex keeps no chunk texts in its mirror: a search fetches the texts of its hits from
the table, and a text must be the one that was scored. Two indexes on one folder stand for
two processes: one replaces or deletes a document while the other's mirror still holds the
version it scored."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from index_contract import DIM, chunk, ids, meta, random_unit

from bastion.knowledge.index import lance
from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.models import IndexedChunk, IndexFilter, IndexHit

EMBEDDER = "test-embedder"


def _open(folder: Path, dim: int | None = DIM) -> LanceIndex:
    return LanceIndex(folder, dim=dim, embedder=EMBEDDER, keep_texts=False)


def _texts(hits: list[IndexHit]) -> list[str]:
    return [h.chunk.text for h in hits]


def test_hits_and_chunks_carry_their_texts_after_a_reopen(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    written = [chunk(f"a{i}", meta("a"), f"apple pie number {i}", seq=i) for i in range(3)]
    index.upsert(written)
    index.upsert([chunk("b0", meta("b"), "banana bread")])
    expected = {c.chunk_id: c.text for c in written} | {"b0": "banana bread"}
    for opened in (index, _open(folder)):
        hits = opened.search_keyword("apple", 10)
        assert sorted(ids(hits)) == ["a0", "a1", "a2"]
        assert all(h.chunk.text == expected[h.chunk.chunk_id] for h in hits)
        vec = opened.search_vector(random_unit("b0"), 1)
        assert ids(vec) == ["b0"] and _texts(vec) == ["banana bread"]
        assert [c.text for c in opened.chunks_of("a")] == [c.text for c in written]
        assert [(c.start_line, c.end_line) for c in opened.chunks_of("a")] == [
            (c.start_line, c.end_line) for c in written
        ]


def test_the_mirror_holds_no_text(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _open(folder).upsert([chunk("a0", meta("a"), "apple " * 200)])
    again = _open(folder)
    held = [c for c in again._chunks if c is not None]
    assert [c.text for c in held] == [""]
    assert _texts(again.search_keyword("apple", 1)) == ["apple " * 200]


def test_a_text_replaced_after_scoring_is_left_out_not_shown(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    mine = _open(folder)
    mine.upsert([chunk("s0", meta("s", classification="public"), "quarterly summary draft")])
    other = _open(folder)
    # another process makes the document secret and rewrites its text under the same id
    other.replace_document(
        "s", [chunk("s0", meta("s", classification="restricted"), "quarterly secret numbers")]
    )
    public = IndexFilter(classifications=frozenset({"public"}))
    # this mirror still scores the public version; its table handle still reads the version
    # it loaded, which holds the text scored
    assert _texts(mine.search_keyword("quarterly", 5, public)) == ["quarterly summary draft"]
    # a write of its own moves the handle to the latest version (the mirror is not refreshed
    # by it): the scored text is no longer there
    mine.upsert([chunk("t0", meta("t"), "unrelated")])
    assert mine.search_keyword("quarterly", 5, public) == []
    assert "s0" not in ids(mine.search_vector(random_unit("s0"), 5, public))
    assert mine.chunks_of("s") == []
    assert mine.refresh()
    assert mine.search_keyword("quarterly", 5, public) == []
    secret = mine.search_keyword("quarterly", 5)
    assert _texts(secret) == ["quarterly secret numbers"]
    assert secret[0].chunk.doc.classification == "restricted"


def test_a_chunk_deleted_after_scoring_is_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    mine = _open(folder)
    mine.upsert([chunk("g0", meta("g"), "gone tomorrow"), chunk("k0", meta("k"), "kept today")])
    _open(folder).delete_documents(["g"])
    mine._latest()  # as after a write of its own, or a compaction elsewhere
    assert ids(mine.search_keyword("gone kept", 5)) == ["k0"]
    assert _texts(mine.search_keyword("gone kept", 5)) == ["kept today"]


def test_an_unchanged_text_rewritten_elsewhere_still_shows(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    mine = _open(folder)
    mine.upsert([chunk("u0", meta("u", version="1"), "same words again")])
    _open(folder).upsert([chunk("u0", meta("u", version="2"), "same words again")])
    mine._latest()
    hits = mine.search_keyword("words", 5)
    assert _texts(hits) == ["same words again"]
    assert hits[0].chunk.doc.version == "1"  # the version scored, whose text this is


def test_texts_are_fetched_after_another_process_compacted_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lance, "_KEEP", timedelta(0))
    monkeypatch.setattr(lance, "_COMPACT_EVERY", 2)
    folder = tmp_path / "index"
    mine = _open(folder)
    mine.upsert([chunk("m0", meta("m"), "mine to find")])
    other = _open(folder)
    for i in range(4):  # compactions drop every older version, the one this mirror read too
        other.upsert([chunk(f"o{i}", meta(f"o{i}"), f"other {i}")])
    assert _texts(mine.search_keyword("find", 5)) == ["mine to find"]


def test_a_reopen_takes_documents_in_whole_when_it_reads_in_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks overlap (each opens with the end of the one before) and keyword search indexes
    what a chunk adds: a reopen reading 4 rows at a time must not cut a document in two."""
    folder = tmp_path / "index"
    index = _open(folder, dim=None)
    words = [f"w{i:03d}" for i in range(60)]
    for d in range(5):
        parts: list[IndexedChunk] = []
        for seq in range(3):
            text = " ".join(words[seq * 8 : seq * 8 + 12]) + f" doc{d} tail{seq}"
            parts.append(chunk(f"d{d}#{seq}", meta(f"d{d}"), text, seq=seq, vector=None))
        index.upsert(parts)
    query = "w008 w009 w010 w011 w016 tail1"
    before = index.search_keyword(query, 20)
    monkeypatch.setattr(lance, "_LOAD", 4)
    after = _open(folder, dim=None).search_keyword(query, 20)
    assert [(h.chunk.chunk_id, h.score, h.chunk.text) for h in after] == [
        (h.chunk.chunk_id, h.score, h.chunk.text) for h in before
    ]


def test_texts_stay_right_across_a_compaction_of_the_mirror(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder, dim=None)
    index.upsert(
        [chunk(f"x{i}", meta(f"x{i}"), f"filler {i}", vector=None) for i in range(1100)]
        + [chunk("y0", meta("y"), "yellow submarine", vector=None)]
    )
    slots = len(index._chunks)
    index.delete_documents([f"x{i}" for i in range(1100)])
    assert len(index._chunks) < slots  # the dead slots went, their text hashes with them
    assert _texts(index.search_keyword("yellow", 5)) == ["yellow submarine"]
    index.upsert([chunk("z0", meta("z"), "zebra crossing", vector=None)])
    found = {(h.chunk.chunk_id, h.chunk.text) for h in index.search_keyword("zebra yellow", 5)}
    assert found == {("z0", "zebra crossing"), ("y0", "yellow submarine")}


def test_opening_a_folder_makes_the_chunk_id_index(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _open(folder).upsert([chunk("a0", meta("a"), "apple")])
    table = _open(folder)._table
    assert any(i.columns == ["chunk_id"] for i in table.list_indices())


def test_by_default_a_small_index_keeps_its_texts_and_a_large_one_fetches_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "index"
    written = [chunk(f"a{i}", meta("a"), f"apple pie number {i}", seq=i) for i in range(6)]
    new = LanceIndex(folder, dim=DIM, embedder=EMBEDDER)  # a new index starts small
    new.upsert(written)
    assert new.keeps_texts
    for limit, kept in ((6, True), (5, False)):
        monkeypatch.setattr(lance, "_KEEP_TEXTS", limit)
        opened = LanceIndex(folder, dim=DIM, embedder=EMBEDDER)
        assert opened.keeps_texts is kept
        held = sorted(c.text for c in opened._chunks if c is not None)
        assert held == (sorted(c.text for c in written) if kept else [""] * 6)
        hits = opened.search_keyword("apple", 10)  # either way a hit carries its text
        assert sorted(_texts(hits)) == sorted(c.text for c in written)


def test_every_few_fetches_the_heap_is_given_back_and_searches_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "index"
    _open(folder).upsert([chunk(f"a{i}", meta(f"a{i}"), f"apple tart {i}") for i in range(4)])
    opened = _open(folder)
    given: list[int] = []
    real = lance._give_back
    monkeypatch.setattr(lance, "_TRIM_EVERY", 3)
    monkeypatch.setattr(lance, "_give_back", lambda: (given.append(1), real())[1])
    for _ in range(7):
        assert sorted(_texts(opened.search_keyword("apple", 10))) == [
            f"apple tart {i}" for i in range(4)
        ]
    assert len(given) == 2  # fetches 3 and 6

    kept = LanceIndex(folder, dim=DIM, embedder=EMBEDDER, keep_texts=True)
    given.clear()  # its open gave back what the load freed
    for _ in range(7):  # a mirror that keeps its texts never fetches, so never trims
        assert len(kept.search_keyword("apple", 10)) == 4
    assert not given
