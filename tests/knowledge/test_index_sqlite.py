"""SQLiteIndex (the core's persistent index) against the index contract; what it keeps across
a reopen; several processes' writes seen by the others' next search; a file built with another
embedder refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from index_contract import (
    DIM,
    GUIDE,
    IndexContract,
    chunk,
    ids,
    meta,
    random_unit,
    write_for_reopen,
)

from bastion.core.errors import ConfigurationError, StoreError
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.sqlite import SQLiteIndex


class TestSQLiteIndex(IndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> SQLiteIndex:
        return SQLiteIndex(tmp_path / "index.sqlite", dim=DIM)


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    first = SQLiteIndex(tmp_path / "i.sqlite", dim=DIM)
    write_for_reopen(first)
    first.close()
    index = SQLiteIndex(tmp_path / "i.sqlite", dim=DIM)
    assert index.count() == 4
    assert index.documents()["d"] == GUIDE
    assert [c.text for c in index.chunks_of("d")] == [f"part {i} of the guide" for i in range(3)]
    [other] = index.chunks_of("o")
    assert other.section == "Top > Sub"
    assert ids(index.search_keyword("guide", 5))[0].startswith("c")
    assert ids(index.search_vector(random_unit("c1"), 1)) == ["c1"]
    stored = index.chunks_of("d")[1].vector
    assert stored is not None
    np.testing.assert_allclose(stored, random_unit("c1"))


def test_deletes_replacements_and_clear_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    index = SQLiteIndex(path)
    index.upsert([chunk("a0", meta("a"), "alpha words"), chunk("b0", meta("b"), "beta words")])
    index.replace_document("a", [chunk("a1", meta("a"), "alpha again")])
    index.delete_documents(["b"])
    index.close()
    again = SQLiteIndex(path)
    assert sorted(again.documents()) == ["a"]
    assert ids(again.search_keyword("alpha", 5)) == ["a1"]
    again.clear()
    again.close()
    assert SQLiteIndex(path).count() == 0


def test_same_scores_as_the_memory_index(tmp_path: Path) -> None:
    texts = ["the quokka eats leaves", "a quokka and a wallaby", "leaves fall in autumn"]
    chunks = [chunk(f"c{i}", meta(f"d{i}"), t) for i, t in enumerate(texts)]
    memory, stored = MemoryIndex(), SQLiteIndex(tmp_path / "i.sqlite")
    memory.upsert(chunks)
    stored.upsert(chunks)
    stored.close()
    reopened = SQLiteIndex(tmp_path / "i.sqlite")
    for query in ("quokka", "leaves", "wallaby autumn"):
        assert [(h.chunk.chunk_id, round(h.score, 6)) for h in memory.search_keyword(query, 5)] == [
            (h.chunk.chunk_id, round(h.score, 6)) for h in reopened.search_keyword(query, 5)
        ]


def test_another_connections_writes_are_seen_after_refresh(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    reader, writer = SQLiteIndex(path), SQLiteIndex(path)
    writer.upsert([chunk("q", meta("q"), "quokka island")])
    assert reader.search_keyword("quokka", 5) == []
    assert reader.refresh() is True
    assert ids(reader.search_keyword("quokka", 5)) == ["q"]
    assert reader.refresh() is False  # nothing new: no reload
    writer.replace_document("q", [chunk("q2", meta("q"), "wallaby island")])
    reader.refresh()
    assert ids(reader.search_keyword("quokka", 5)) == []
    assert ids(reader.search_keyword("wallaby", 5)) == ["q2"]
    writer.clear()
    reader.refresh()
    assert reader.count() == 0


def test_a_writer_takes_in_others_writes_first(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    one, two = SQLiteIndex(path), SQLiteIndex(path)
    one.upsert([chunk("a", meta("a"), "alpha")])
    two.upsert([chunk("b", meta("b"), "beta")])  # catches up with one's write inside its own
    assert sorted(two.documents()) == ["a", "b"]


def test_a_file_built_with_another_embedder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "idx" / "i.sqlite"
    SQLiteIndex(path, dim=DIM, embedder="model-a").close()
    with pytest.raises(ConfigurationError, match=r"built differently.*rebuild"):
        SQLiteIndex(path, dim=DIM, embedder="model-b")
    with pytest.raises(ConfigurationError, match="dim"):
        SQLiteIndex(path, dim=None, embedder="model-a")


def test_a_vector_of_the_wrong_size_writes_nothing(tmp_path: Path) -> None:
    index = SQLiteIndex(tmp_path / "i.sqlite", dim=DIM)
    bad = chunk("x", meta("x"), vector=np.ones(DIM + 1, np.float32))
    with pytest.raises(ValueError, match="dimensions"):
        index.upsert([bad])
    index.close()
    assert SQLiteIndex(tmp_path / "i.sqlite", dim=DIM).count() == 0


def test_a_file_that_is_not_an_index_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="index open failed in") as caught:
        SQLiteIndex(path)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.Error)
