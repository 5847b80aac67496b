"""MemoryIndex against the index contract, its own slot bookkeeping, and a model-based check
of random upserts and deletes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_contract import DIM, IndexContract, chunk, ids, meta, random_unit, unit

from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexFilter


class TestMemoryIndex(IndexContract):
    @pytest.fixture
    def index(self) -> MemoryIndex:
        return MemoryIndex()


# -- slots, compaction and vectors ---------------------------------------------------------------


def test_many_removals_compact_the_slots() -> None:
    index = MemoryIndex()
    index.upsert([chunk(f"c{i}", meta(f"d{i}"), f"common w{i}") for i in range(1300)])
    index.delete_documents([f"d{i}" for i in range(1200)])
    assert index._bm25.slots == index.count() == 100  # compacted: no dead slot left
    assert ids(index.search_keyword("w1250", 3)) == ["c1250"]
    assert ids(index.search_vector(random_unit("c1250"), 1)) == ["c1250"]


def test_few_removals_do_not_compact() -> None:
    index = MemoryIndex()
    index.upsert([chunk(f"c{i}", meta(f"d{i}")) for i in range(50)])
    index.delete_documents([f"d{i}" for i in range(40)])
    assert index._bm25.slots == 50
    assert index.count() == 10


def _bare(chunk_id: str, doc_id: str, text: str = "common") -> IndexedChunk:
    return IndexedChunk(
        chunk_id=chunk_id, doc=meta(doc_id), seq=0, text=text, start_line=1, end_line=1
    )


def test_chunks_without_vectors_next_to_chunks_with_them() -> None:
    index = MemoryIndex()
    east = unit([1, 0, 0, 0, 0, 0, 0, 0])
    index.upsert([chunk("v0", meta("d"), vector=east)])
    index.upsert([_bare(f"n{i}", "d") for i in range(150)])  # past the first block of rows
    assert ids(index.search_vector(east, 10)) == ["v0"]
    assert ids(index.search_vector(east, 10, IndexFilter(doc_ids=frozenset({"d"})))) == ["v0"]
    index.upsert([chunk("v1", meta("e"), vector=east)])
    assert ids(index.search_vector(east, 10)) == ["v0", "v1"]
    assert len(index.search_keyword("common", 500)) == 152
    index.delete_documents(["d"])
    assert ids(index.search_vector(east, 10)) == ["v1"]


def test_keyword_only_index_has_no_vector_search() -> None:
    index = MemoryIndex()
    index.upsert([_bare("c", "d", "t1 t2")])
    assert index.search_vector(unit([1.0] * DIM), 5) == []
    assert ids(index.search_keyword("t1", 5)) == ["c"]


def test_compaction_with_chunks_without_vectors() -> None:
    index = MemoryIndex()
    index.upsert([chunk("v", meta("v"), "common vectored")])
    index.upsert([_bare(f"b{i}", f"b{i}", f"common w{i}") for i in range(1300)])
    index.delete_documents([f"b{i}" for i in range(1200)])
    assert index._bm25.slots == index.count() == 101
    assert ids(index.search_vector(random_unit("q"), 500)) == ["v"]
    assert ids(index.search_vector(random_unit("v"), 1)) == ["v"]
    assert ids(index.search_keyword("w1250", 3)) == ["b1250"]
    index.upsert([chunk("v2", meta("v2"))])
    assert ids(index.search_vector(random_unit("v2"), 1)) == ["v2"]
    assert set(ids(index.search_vector(random_unit("q"), 500))) == {"v", "v2"}


def test_compaction_forgets_metadata_of_old_versions() -> None:
    index = MemoryIndex()
    seen: list[str | None] = []

    def access(m: DocumentMeta) -> bool:
        seen.append(m.version)
        return True

    for version in range(30):  # 30 edits of the same 50-chunk document
        doc = meta("d", version=str(version))
        index.replace_document("d", [chunk(f"c{i}", doc, seq=i) for i in range(50)])
    assert index._bm25.slots < 30 * 50  # compacted along the way
    flt = IndexFilter(access=access, access_key="all", tenant="t")
    assert len(index.search_keyword("common", 100, flt)) == 50
    # versions dropped by the last compaction are not checked (nor kept) any more
    assert "29" in seen
    assert len(seen) == len(index._metas) < 30
    assert index.documents()["d"].version == "29"


def test_documents_reports_the_latest_labels() -> None:
    index = MemoryIndex()
    index.upsert([chunk(f"c{i}", meta("d", version="1"), seq=i) for i in range(3)])
    index.upsert([chunk("c1", meta("d", version="2"), seq=1)])
    assert index.documents()["d"].version == "2"


def test_custom_analyzer_and_parameters() -> None:
    index = MemoryIndex(analyzer=Analyzer(stopwords=frozenset({"common"})), k1=1.2, b=0.5)
    index.upsert([chunk("c", meta("d"), "common words")])
    assert index.search_keyword("common", 5) == []
    assert ids(index.search_keyword("words", 5)) == ["c"]


# -- model-based: random upserts and deletes against a dict ---------------------------------------

WORDS = ["alpha", "beta", "gamma", "running", "runs", "the", "Delta", "x"]
QUERIES = ["alpha", "beta", "gamma", "run", "delta", "the"]
DOCS = {
    "d0": meta("d0"),
    "d1": meta("d1", tenant="acme", path="/docs/sub/d1.md"),
    "d2": meta("d2", tenant="globex", roles=frozenset({"eng"})),
    "d3": meta("d3", path="/docs2/d3.md", tags=frozenset({"t"})),
}
FILTERS = [
    IndexFilter(tenant="acme"),
    IndexFilter(path_prefix="/docs"),
    IndexFilter(roles=frozenset({"sales"})),
    IndexFilter(tags=frozenset({"t"})),
    IndexFilter(doc_ids=frozenset({"d0", "d2"})),
]
ANALYZER = Analyzer()

upserts = st.builds(
    lambda cid, doc, words, vec: ("upsert", cid, doc, " ".join(words), vec),
    st.sampled_from([f"c{i}" for i in range(8)]),
    st.sampled_from(sorted(DOCS)),
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.integers(0, 5),
)
deletes = st.builds(lambda doc: ("delete", doc), st.sampled_from(sorted(DOCS)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(upserts, deletes), min_size=1, max_size=25))
def test_random_writes_match_a_model(steps: list[tuple[object, ...]]) -> None:
    index = MemoryIndex()
    model: dict[str, IndexedChunk] = {}
    for step in steps:
        if step[0] == "upsert":
            _, cid, doc_id, text, vec = step
            assert isinstance(cid, str)
            assert isinstance(doc_id, str)
            assert isinstance(text, str)
            new = chunk(cid, DOCS[doc_id], text, vector=random_unit(f"v{vec}"))
            index.upsert([new])
            model[cid] = new
        else:
            gone = [c for c in model.values() if c.doc.doc_id == step[1]]
            assert index.delete_documents([str(step[1])]) == len(gone)
            for c in gone:
                del model[c.chunk_id]

        assert index.count() == len(model)
        assert set(index.documents()) == {c.doc.doc_id for c in model.values()}
        for query in QUERIES:
            terms = set(ANALYZER.analyze(query))
            expected = {cid for cid, c in model.items() if terms & set(ANALYZER.analyze(c.text))}
            hits = index.search_keyword(query, 1000)
            assert set(ids(hits)) == expected
            assert len(hits) == len(expected)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for flt in FILTERS:
            admitted = {cid for cid, c in model.items() if flt.admits(c.doc)}
            dense = index.search_vector(random_unit("query"), 1000, flt)
            assert set(ids(dense)) == admitted
            assert len(dense) == len(admitted)
            query = random_unit("query")
            best = sorted((float(np.dot(model[c].vector, query)) for c in admitted), reverse=True)
            assert [h.score for h in dense] == pytest.approx(best, abs=1e-5)


def test_vector_scores_are_dot_products() -> None:
    index = MemoryIndex()
    vectors = {f"c{i}": random_unit(f"c{i}") for i in range(10)}
    index.upsert([chunk(cid, meta(cid)) for cid in vectors])
    query = random_unit("query")
    hits = index.search_vector(query, 10)
    assert [h.score for h in hits] == pytest.approx(
        sorted((float(v @ query) for v in vectors.values()), reverse=True), abs=1e-6
    )
    assert {h.chunk.chunk_id: h.score for h in hits} == pytest.approx(
        {cid: float(np.dot(v, query)) for cid, v in vectors.items()}, abs=1e-6
    )
