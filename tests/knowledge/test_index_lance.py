"""LanceIndex against the index contract, and what only a persistent index has to do: keep
everything across a reopen, refuse a folder built differently, quote ids safely."""

from __future__ import annotations

import json
from pathlib import Path

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

from bastion.core.errors import ConfigurationError
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.models import IndexedChunk, IndexFilter

EMBEDDER = "test-embedder"


class TestLanceIndex(IndexContract):
    @pytest.fixture(params=[True, False], ids=["texts-kept", "texts-fetched"])
    def index(self, tmp_path: Path, request: pytest.FixtureRequest) -> LanceIndex:
        return LanceIndex(tmp_path / "index", dim=DIM, embedder=EMBEDDER, keep_texts=request.param)


def _open(folder: Path, **options: object) -> LanceIndex:
    options.setdefault("dim", DIM)
    options.setdefault("embedder", EMBEDDER)
    return LanceIndex(folder, **options)


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    write_for_reopen(index)
    index.delete_documents(["missing"])
    before_kw = index.search_keyword("guide", 10)
    before_vec = index.search_vector(random_unit("q"), 10, IndexFilter(tenant="acme"))
    index.close()

    again = _open(folder)
    assert again.count() == 4
    assert again.documents() == {"d": GUIDE, "o": meta("o")}
    assert again.chunks_of("d") == index.chunks_of("d")
    assert again.chunks_of("o")[0].section == "Top > Sub"
    after_kw = again.search_keyword("guide", 10)
    assert ids(after_kw) == ids(before_kw)
    assert [h.score for h in after_kw] == pytest.approx([h.score for h in before_kw])
    after_vec = again.search_vector(random_unit("q"), 10, IndexFilter(tenant="acme"))
    assert ids(after_vec) == ids(before_vec)
    assert [h.score for h in after_vec] == pytest.approx([h.score for h in before_vec])
    for c in again.chunks_of("d"):
        assert c.vector is not None
        assert c.vector.tolist() == pytest.approx(random_unit(c.chunk_id).tolist())


def test_deletes_and_replacements_survive_a_reopen(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    index.upsert([chunk(f"a{i}", meta("a"), f"apple {i}", seq=i) for i in range(4)])
    index.upsert([chunk("b0", meta("b"), "banana")])
    index.upsert([chunk("k0", meta("k"), "kiwi")])
    index.replace_document("a", [chunk("a1", meta("a"), "apple revised", seq=0)])
    index.delete_documents(["b"])
    index.upsert([chunk("k0", meta("k"), "kiwi replaced")])

    again = _open(folder)
    assert set(again.documents()) == {"a", "k"}
    assert [(c.chunk_id, c.text) for c in again.chunks_of("a")] == [("a1", "apple revised")]
    assert [c.text for c in again.chunks_of("k")] == ["kiwi replaced"]
    assert again.count() == 2
    assert again.search_keyword("banana", 5) == []


def test_replace_document_drops_chunks_that_disappeared(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    index.upsert([chunk(f"c{i}", meta("d"), f"section {i}", seq=i) for i in range(5)])
    index.replace_document("d", [chunk("c0", meta("d"), "only the first", seq=0)])
    assert index._table.count_rows() == 1
    assert [c.chunk_id for c in _open(folder).chunks_of("d")] == ["c0"]

    index.replace_document("d", [])
    assert index._table.count_rows() == 0
    assert _open(folder).count() == 0


def test_ids_with_quotes_and_backslashes(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    doc_id = "it's a \"doc\" \\ with ' quotes''"
    tricky = meta(doc_id, path="/docs/it's.md")
    other = meta("o' OR '1'='1")
    chunk_ids = ["c'0", 'c"1', "c\\2", "c'')--3"]
    index.upsert([chunk(cid, tricky, f"quoted {i}", seq=i) for i, cid in enumerate(chunk_ids)])
    index.upsert([chunk("safe", other, "quoted bystander")])

    index.replace_document(doc_id, [chunk("c'0", tricky, "quoted again", seq=0)])
    assert [c.chunk_id for c in index.chunks_of(doc_id)] == ["c'0"]
    assert index._table.count_rows() == 2

    again = _open(folder)
    assert set(again.documents()) == {doc_id, "o' OR '1'='1"}
    assert [c.chunk_id for c in again.chunks_of(doc_id)] == ["c'0"]
    assert again.delete_documents([doc_id]) == 1
    assert again._table.count_rows() == 1  # the injection-shaped id matched nothing else
    assert again.delete_documents(["o' OR '1'='1"]) == 1
    assert _open(folder).count() == 0


def test_duplicate_ids_in_a_batch_are_stored_once(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    index.upsert([chunk("c", meta("d"), "first"), chunk("c", meta("d"), "second")])
    assert index._table.count_rows() == 1
    index.upsert([chunk("c", meta("d"), "third"), chunk("c", meta("d"), "fourth")])
    assert [c.text for c in _open(folder).chunks_of("d")] == ["fourth"]


def test_clear_empties_the_folder_too(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    index.upsert([chunk(f"c{i}", meta(f"d{i}")) for i in range(3)])
    index.clear()
    assert index.count() == 0
    assert _open(folder).count() == 0
    index.upsert([chunk("n", meta("n"), "after the clear")])
    again = _open(folder)
    assert ids(again.search_keyword("clear", 5)) == ["n"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"embedder": "another-embedder"}, "embedder"),
        ({"dim": DIM * 2}, "dim"),
        ({"dim": None}, "dim"),
        ({"analyzer": Analyzer(stopwords=frozenset({"the"}))}, "analyzer"),
    ],
)
def test_a_folder_built_differently_is_refused(
    tmp_path: Path, options: dict[str, object], named: str
) -> None:
    folder = tmp_path / "index"
    _open(folder).upsert([chunk("c", meta("d"))])
    with pytest.raises(ConfigurationError, match=named) as err:
        _open(folder, **options)
    assert "rebuild" in str(err.value)
    assert _open(folder).count() == 1  # the original settings still open it


def test_the_folder_records_how_it_was_built(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _open(folder)
    recorded = json.loads((folder / "bastion-index.json").read_text(encoding="utf-8"))
    assert recorded["dim"] == DIM
    assert recorded["embedder"] == EMBEDDER
    assert recorded["analyzer"] == Analyzer().name


def test_a_missing_vector_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    bare = IndexedChunk(
        chunk_id="b", doc=meta("d"), seq=1, text="no vector", start_line=1, end_line=1
    )
    with pytest.raises(ValueError, match="no vector"):
        index.upsert([chunk("c", meta("d")), bare])
    assert index.count() == 0
    assert _open(folder).count() == 0


def test_a_refused_replace_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder)
    index.upsert([chunk(f"c{i}", meta("d"), f"kept {i}", seq=i) for i in range(3)])
    bare = IndexedChunk(
        chunk_id="b", doc=meta("d"), seq=1, text="no vector", start_line=1, end_line=1
    )
    with pytest.raises(ValueError, match="no vector"):
        index.replace_document("d", [chunk("c0", meta("d"), "new text"), bare])
    assert [c.text for c in index.chunks_of("d")] == ["kept 0", "kept 1", "kept 2"]
    assert [c.text for c in _open(folder).chunks_of("d")] == ["kept 0", "kept 1", "kept 2"]


def test_keyword_only_index(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    index = _open(folder, dim=None, embedder=None)
    with_vector = chunk("v", meta("d"), "has a vector anyway")
    bare = IndexedChunk(
        chunk_id="b", doc=meta("d"), seq=1, text="plain text", start_line=1, end_line=1
    )
    index.upsert([with_vector, bare])
    assert index.search_vector(random_unit("v"), 5) == []  # no vectors kept, as after a reopen
    again = _open(folder, dim=None, embedder=None)
    assert again.search_vector(random_unit("v"), 5) == []
    assert set(ids(again.search_keyword("plain vector", 5))) == {"b", "v"}
    assert again.count() == 2
