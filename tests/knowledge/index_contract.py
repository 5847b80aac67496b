"""The index contract: what every :class:`~bastion.knowledge.index.port.Index` must do.

An index's test module subclasses :class:`IndexContract` and provides the ``index`` fixture
(a fresh, empty index of :data:`DIM`-dimensional vectors per test)::

    class TestMemoryIndex(IndexContract):
        @pytest.fixture
        def index(self) -> MemoryIndex:
            return MemoryIndex()

The suite covers writes (upsert replaces by chunk id, delete by document, replace), reads
(documents, chunks in order, count, clear), both searches and their ranking, every filter
condition, the pre-filtering property (``k`` hits are ``k`` hits that pass the filter), the
cache of filter masks, and compaction after many removals.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pytest

from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexFilter, IndexHit
from bastion.knowledge.index.port import Index

__all__ = [
    "DIM",
    "GUIDE",
    "IndexContract",
    "chunk",
    "ids",
    "meta",
    "random_unit",
    "unit",
    "write_for_reopen",
]

DIM = 8
"""Vector size of every index the contract runs against."""

Vector = npt.NDArray[np.float32]


def unit(values: Iterable[float]) -> Vector:
    vec = np.asarray(list(values), dtype=np.float32)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def random_unit(seed: str) -> Vector:
    """A unit vector fixed by ``seed`` (so a chunk's vector follows from its id)."""
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    return unit(rng.standard_normal(DIM))


def meta(doc_id: str, **labels: object) -> DocumentMeta:
    """A document at ``/docs/<doc_id>.md`` unless ``path`` is given."""
    labels.setdefault("path", f"/docs/{doc_id}.md")
    return DocumentMeta(doc_id=doc_id, **labels)


def chunk(
    chunk_id: str,
    doc: DocumentMeta,
    text: str = "common words",
    *,
    seq: int = 0,
    section: str = "",
    vector: Vector | None = None,
) -> IndexedChunk:
    return IndexedChunk(
        chunk_id=chunk_id,
        doc=doc,
        seq=seq,
        text=text,
        start_line=seq * 10 + 1,
        end_line=seq * 10 + 9,
        section=section,
        vector=random_unit(chunk_id) if vector is None else vector,
    )


def ids(hits: Iterable[IndexHit]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


# -- what a persistent index keeps across a reopen ---------------------------------------------

GUIDE = meta(
    "d",
    title="Guide",
    date="2024-05-01",
    tenant="acme",
    classification="internal",
    roles=frozenset({"eng", "ops"}),
    tags=frozenset({"x", "y"}),
    version="v3",
)
"""A document with every label set."""


def write_for_reopen(index: Index) -> None:
    """Three chunks of :data:`GUIDE` (``c0``..``c2``) and one sectioned chunk of ``o``."""
    index.upsert([chunk(f"c{i}", GUIDE, f"part {i} of the guide", seq=i) for i in range(3)])
    index.upsert([chunk("o", meta("o"), "unrelated page", section="Top > Sub")])


# -- a labelled corpus for the filter table ----------------------------------------------------

_ROOT = meta("root", path="/readme.md")
_A = meta(
    "a",
    tenant="acme",
    classification="internal",
    roles=frozenset({"eng"}),
    tags=frozenset({"a", "b"}),
    date="2024-03-15",
)
_SUB = meta(
    "sub",
    path="/docs/sub/b.md",
    tenant="globex",
    classification="confidential",
    roles=frozenset({"sales"}),
    tags=frozenset({"a"}),
    date="2023-12-31",
)
_DOCS2 = meta(
    "docs2",
    path="/docs2/x.md",
    roles=frozenset({"eng", "sales"}),
    tags=frozenset({"b"}),
    date="2024-06-30",
)
_DOCSFILE = meta(
    "docsfile",
    path="/docs.md",
    tenant="acme",
    classification="secret",
    tags=frozenset({"a", "b", "c"}),
    date="2024-07-01",
)
_MULTI = meta("multi", date="2024-01-01T10:00:00")

LABELLED = [
    chunk("root", _ROOT),
    chunk("a", _A),
    chunk("sub", _SUB),
    chunk("docs2", _DOCS2),
    chunk("docsfile", _DOCSFILE),
    chunk("multi-0", _MULTI, seq=0, section="Intro > Setup"),
    chunk("multi-1", _MULTI, seq=1, section="INTRODUCTION"),
    chunk("multi-2", _MULTI, seq=2, section="Usage > intro"),
]
EVERY = {c.chunk_id for c in LABELLED}
MULTI = {"multi-0", "multi-1", "multi-2"}

FILTER_TABLE: list[tuple[str, IndexFilter, set[str]]] = [
    ("none", IndexFilter(), EVERY),
    ("prefix per segment", IndexFilter(path_prefix="/docs"), {"a", "sub"} | MULTI),
    ("prefix trailing slash", IndexFilter(path_prefix="/docs/"), {"a", "sub"} | MULTI),
    ("prefix deeper", IndexFilter(path_prefix="/docs/sub"), {"sub"}),
    ("prefix is the file", IndexFilter(path_prefix="/docs/a.md"), {"a"}),
    ("prefix root", IndexFilter(path_prefix="/"), EVERY),
    ("doc ids", IndexFilter(doc_ids=frozenset({"root", "docs2"})), {"root", "docs2"}),
    ("no doc ids", IndexFilter(doc_ids=frozenset()), set()),
    ("tenant, unbound pass", IndexFilter(tenant="acme"), EVERY - {"sub"}),
    (
        "classifications",
        IndexFilter(classifications=frozenset({"public", "internal"})),
        {"root", "a", "docs2"} | MULTI,
    ),
    ("roles, empty = everyone", IndexFilter(roles=frozenset({"eng"})), EVERY - {"sub"}),
    ("asker without roles", IndexFilter(roles=frozenset()), {"root", "docsfile"} | MULTI),
    ("tags all required", IndexFilter(tags=frozenset({"a", "b"})), {"a", "docsfile"}),
    ("one tag", IndexFilter(tags=frozenset({"c"})), {"docsfile"}),
    ("section prefix, any case", IndexFilter(section="intro"), {"multi-0", "multi-1"}),
    ("section deeper", IndexFilter(section="intro > SET"), {"multi-0"}),
    (
        "date range, undated fail",
        IndexFilter(date_from="2024-01-01", date_to="2024-06-30"),
        {"a", "docs2"} | MULTI,
    ),
    ("year from", IndexFilter(date_from="2024"), {"a", "docs2", "docsfile"} | MULTI),
    ("date to", IndexFilter(date_to="2023-12-31"), {"sub"}),
    (
        "access callable",
        IndexFilter(access=lambda m: m.path.endswith("a.md"), access_key="ends-a"),
        {"a"},
    ),
    (
        "combined",
        IndexFilter(path_prefix="/docs", tenant="acme", roles=frozenset({"eng"})),
        {"a"} | MULTI,
    ),
]


class IndexContract:
    """Behaviour shared by every index. Subclasses override the ``index`` fixture."""

    @pytest.fixture
    def index(self) -> Index:
        raise NotImplementedError("an IndexContract subclass must provide the `index` fixture")

    def test_kind(self, index: Index) -> None:
        assert index.kind != Index.kind  # each index names itself

    # -- writes ------------------------------------------------------------------------------

    def test_upsert_then_search_finds_it(self, index: Index) -> None:
        c = chunk("c1", meta("d1"), "Solar panels convert sunlight into electricity")
        index.upsert([c])
        hits = index.search_keyword("sunlight", 5)
        assert ids(hits) == ["c1"]
        assert hits[0].chunk == c
        assert hits[0].score > 0
        near = index.search_vector(c.vector, 5)
        assert ids(near) == ["c1"]
        assert near[0].score == pytest.approx(1.0, abs=1e-5)

    def test_upsert_nothing_is_a_no_op(self, index: Index) -> None:
        index.upsert([])
        assert index.count() == 0
        assert index.documents() == {}

    def test_upsert_same_chunk_id_replaces(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1"), "the old wording about elephants")])
        index.upsert([chunk("c1", meta("d1"), "new wording about giraffes")])
        assert index.count() == 1
        assert index.search_keyword("elephants", 5) == []
        assert ids(index.search_keyword("giraffes", 5)) == ["c1"]
        assert [c.text for c in index.chunks_of("d1")] == ["new wording about giraffes"]

    def test_upsert_replaces_the_vector(self, index: Index) -> None:
        east, north = unit([1, 0, 0, 0, 0, 0, 0, 0]), unit([0, 1, 0, 0, 0, 0, 0, 0])
        index.upsert([chunk("c1", meta("d1"), vector=east), chunk("c2", meta("d2"), vector=north)])
        index.upsert([chunk("c1", meta("d1"), vector=north)])
        hits = index.search_vector(north, 5)
        assert sorted(ids(hits)) == ["c1", "c2"]
        assert all(h.score == pytest.approx(1.0, abs=1e-5) for h in hits)
        assert index.search_vector(east, 5)[0].score == pytest.approx(0.0, abs=1e-5)

    def test_duplicate_ids_in_one_batch_keep_the_last(self, index: Index) -> None:
        d = meta("d1")
        index.upsert([chunk("c1", d, "first mango"), chunk("c1", d, "second papaya")])
        assert index.count() == 1
        assert [c.text for c in index.chunks_of("d1")] == ["second papaya"]
        index.upsert([chunk("c1", d, "third kiwi"), chunk("c1", d, "fourth lychee")])
        assert index.count() == 1
        assert ids(index.search_keyword("lychee", 5)) == ["c1"]
        assert index.search_keyword("kiwi mango papaya", 5) == []

    def test_chunk_moving_to_another_document(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1")), chunk("c2", meta("d1"), seq=1)])
        index.upsert([chunk("c1", meta("d2"))])
        assert [c.chunk_id for c in index.chunks_of("d1")] == ["c2"]
        assert [c.chunk_id for c in index.chunks_of("d2")] == ["c1"]
        assert index.delete_documents(["d1"]) == 1
        assert index.count() == 1

    def test_wrong_vector_size_is_refused_and_changes_nothing(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1"), "kept text")])
        bad = [
            chunk("c2", meta("d2"), "added text"),
            chunk("c1", meta("d1"), "replaced text", vector=unit([1.0] * (DIM + 1))),
        ]
        with pytest.raises(ValueError):
            index.upsert(bad)
        assert index.count() == 1
        assert ids(index.search_keyword("kept", 5)) == ["c1"]
        assert index.search_keyword("added replaced", 5) == []
        assert ids(index.search_vector(random_unit("c1"), 5)) == ["c1"]

    def test_a_refused_replace_changes_nothing(self, index: Index) -> None:
        index.upsert([chunk(f"c{i}", meta("d"), f"kept {i}", seq=i) for i in range(3)])
        bad = [
            chunk("c0", meta("d"), "new text"),
            chunk("c9", meta("d"), "new chunk", vector=unit([1.0] * (DIM + 1))),
        ]
        with pytest.raises(ValueError):
            index.replace_document("d", bad)
        assert [c.text for c in index.chunks_of("d")] == ["kept 0", "kept 1", "kept 2"]
        assert len(index.search_keyword("kept", 10)) == 3
        assert index.search_keyword("new", 10) == []

    def test_delete_documents_removes_every_chunk_and_counts(self, index: Index) -> None:
        a, b = meta("a"), meta("b")
        index.upsert([chunk(f"a{i}", a, f"alpha part {i}", seq=i) for i in range(3)])
        index.upsert([chunk(f"b{i}", b, f"beta part {i}", seq=i) for i in range(2)])
        assert index.delete_documents(["a"]) == 3
        assert index.count() == 2
        assert index.chunks_of("a") == []
        assert set(ids(index.search_keyword("part", 10))) == {"b0", "b1"}
        assert set(ids(index.search_vector(random_unit("a0"), 10))) == {"b0", "b1"}
        assert index.delete_documents(["a", "missing"]) == 0
        assert index.delete_documents([]) == 0
        assert index.delete_documents(["b", "b"]) == 2
        assert index.count() == 0
        assert index.search_keyword("part", 10) == []
        assert index.search_vector(random_unit("b0"), 10) == []

    def test_replace_document(self, index: Index) -> None:
        d, other = meta("d", version="1"), meta("o")
        index.upsert([chunk(f"d{i}", d, f"first draft {w}", seq=i) for i, w in enumerate("xyz")])
        index.upsert([chunk("o0", other, "first draft elsewhere")])
        d2 = meta("d", version="2")
        index.replace_document(
            "d", [chunk("d0", d2, "second version", seq=0), chunk("d9", d2, "appendix", seq=1)]
        )
        assert [c.chunk_id for c in index.chunks_of("d")] == ["d0", "d9"]
        assert {c.doc.version for c in index.chunks_of("d")} == {"2"}
        assert index.documents()["d"].version == "2"
        assert ids(index.search_keyword("draft", 10)) == ["o0"]
        assert ids(index.search_keyword("appendix", 10)) == ["d9"]
        assert index.count() == 3
        index.replace_document("d", [])
        assert index.chunks_of("d") == []
        assert set(index.documents()) == {"o"}

    def test_replace_documents(self, index: Index) -> None:
        index.upsert([chunk("a0", meta("a"), "old apple"), chunk("b0", meta("b"), "old banana")])
        index.upsert([chunk("c0", meta("c"), "old cherry")])
        index.replace_documents(["a", "b"], [chunk("a1", meta("a"), "new apple")])
        assert set(index.documents()) == {"a", "c"}
        assert set(ids(index.search_keyword("old", 10))) == {"c0"}
        assert ids(index.search_keyword("apple", 10)) == ["a1"]

    # -- reads -------------------------------------------------------------------------------

    def test_documents_and_chunks_of_in_order(self, index: Index) -> None:
        d = meta("d", title="Guide", version="v7")
        index.upsert([chunk(f"c{s}", d, f"part {s}", seq=s) for s in (2, 0, 3, 1)])
        index.upsert([chunk("e0", meta("e"))])
        assert index.documents() == {"d": d, "e": meta("e")}
        assert [c.seq for c in index.chunks_of("d")] == [0, 1, 2, 3]
        assert [c.chunk_id for c in index.chunks_of("d")] == ["c0", "c1", "c2", "c3"]
        first = index.chunks_of("d")[0]
        assert (first.text, first.start_line, first.end_line) == ("part 0", 1, 9)
        assert first.doc == d
        assert index.chunks_of("missing") == []
        assert index.count() == 5

    def test_clear(self, index: Index) -> None:
        index.upsert([chunk(f"c{i}", meta(f"d{i}")) for i in range(5)])
        index.search_keyword("common", 10, IndexFilter(tenant="acme"))
        index.clear()
        assert index.count() == 0
        assert index.documents() == {}
        assert index.search_keyword("common", 10) == []
        assert index.search_keyword("common", 10, IndexFilter(tenant="acme")) == []
        assert index.search_vector(random_unit("c0"), 10) == []
        index.upsert([chunk("n0", meta("n"), "fresh start")])
        assert index.count() == 1
        assert ids(index.search_keyword("fresh", 10, IndexFilter(tenant="acme"))) == ["n0"]

    # -- ranking -----------------------------------------------------------------------------

    def test_keyword_ranks_the_more_relevant_chunk_first(self, index: Index) -> None:
        index.upsert(
            [
                chunk(
                    "weak",
                    meta("g"),
                    "The garden has one solar lamp among many flowers, trees, bushes, hedges, "
                    "ponds, benches and winding gravel paths.",
                ),
                chunk("strong", meta("s"), "Solar power: solar panels and solar cells."),
                chunk("none", meta("n"), "A recipe for bread."),
            ]
        )
        hits = index.search_keyword("solar", 10)
        assert ids(hits) == ["strong", "weak"]
        assert hits[0].score > hits[1].score > 0
        both = index.search_keyword("solar garden", 10)
        assert ids(both)[0] == "weak"  # the rarer term decides

    def test_keyword_search_analyzes_the_query(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1"), "Running the servers")])
        assert ids(index.search_keyword("RUNS server", 5)) == ["c1"]
        assert index.search_keyword("the", 5) == []  # stop words only
        assert index.search_keyword("", 5) == []

    def test_vector_search_returns_the_nearest_first(self, index: Index) -> None:
        query = unit([1, 0, 0, 0, 0, 0, 0, 0])
        angles = {"near": 0.1, "mid": 0.8, "far": 1.5, "opposite": 3.0}
        index.upsert(
            [
                chunk(name, meta(name), vector=unit([np.cos(a), np.sin(a), 0, 0, 0, 0, 0, 0]))
                for name, a in angles.items()
            ]
        )
        hits = index.search_vector(query, 10)
        assert ids(hits) == ["near", "mid", "far", "opposite"]
        assert [h.score for h in hits] == pytest.approx([np.cos(a) for a in angles.values()])

    def test_k_is_respected(self, index: Index) -> None:
        index.upsert([chunk(f"c{i:02}", meta(f"d{i:02}"), "common " * (i + 1)) for i in range(20)])
        assert len(index.search_keyword("common", 5)) == 5
        assert len(index.search_vector(random_unit("q"), 5)) == 5
        assert len(index.search_keyword("common", 50)) == 20
        assert len(index.search_vector(random_unit("q"), 50)) == 20
        assert index.search_keyword("common", 0) == []
        assert index.search_vector(random_unit("q"), 0) == []

    def test_top_k_is_the_best_k(self, index: Index) -> None:
        chunks = [chunk(f"c{i:02}", meta(f"d{i:02}")) for i in range(40)]
        index.upsert(chunks)
        query = random_unit("query")
        expected = sorted(chunks, key=lambda c: -float(c.vector @ query))
        assert ids(index.search_vector(query, 7)) == [c.chunk_id for c in expected[:7]]

    def test_empty_index_searches(self, index: Index) -> None:
        assert index.search_keyword("anything", 5) == []
        assert index.search_vector(random_unit("q"), 5) == []
        assert index.search_keyword("anything", 5, IndexFilter(tenant="t")) == []
        assert index.count() == 0

    # -- filters -----------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [pytest.param(f, e, id=name) for name, f, e in FILTER_TABLE],
    )
    def test_filter_conditions(self, index: Index, flt: IndexFilter, expected: set[str]) -> None:
        index.upsert(LABELLED)
        keyword = index.search_keyword("common", 100, flt)
        assert set(ids(keyword)) == expected
        assert len(keyword) == len(expected)
        dense = index.search_vector(random_unit("query"), 100, flt)
        assert set(ids(dense)) == expected
        again = index.search_keyword("common", 100, flt)  # a second time, from any cache
        assert set(ids(again)) == expected

    def test_filters_follow_relabelled_documents(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1", tenant="acme"))])
        acme = IndexFilter(tenant="acme")
        assert ids(index.search_keyword("common", 5, acme)) == ["c1"]
        index.upsert([chunk("c1", meta("d1", tenant="globex"))])
        assert index.search_keyword("common", 5, acme) == []
        assert index.search_vector(random_unit("c1"), 5, acme) == []
        assert ids(index.search_keyword("common", 5, IndexFilter(tenant="globex"))) == ["c1"]

    @pytest.mark.parametrize("n_passing", [3, 30])
    def test_k_results_are_k_authorized_results(self, index: Index, n_passing: int) -> None:
        """50 chunks match; the filter admits the *least* relevant of them. A filter applied
        after ranking would return nothing; applied before, k results come back, all passing."""
        query = unit([1, 0, 0, 0, 0, 0, 0, 0])
        rng = np.random.default_rng(7)
        chunks = []
        for i in range(50):
            passing = i < n_passing
            noise = rng.normal(0, 0.05, DIM)
            if passing:  # far from the query, one mention in a long text
                text = f"needle {' '.join(f'filler{j}' for j in range(10 + i))}"
                vector = unit(-query + noise)
            else:  # close to the query, many mentions
                text = "needle needle needle needle"
                vector = unit(query + noise)
            doc = meta(f"d{i:02}", tenant="acme" if passing else "globex")
            chunks.append(chunk(f"c{i:02}", doc, text, vector=vector))
        index.upsert(chunks)
        passing_ids = {f"c{i:02}" for i in range(n_passing)}
        flt = IndexFilter(tenant="acme")
        want = min(n_passing, 10)

        keyword = index.search_keyword("needle", 10, flt)
        assert len(keyword) == want
        assert set(ids(keyword)) <= passing_ids
        # the best of the passing: one mention in the shortest texts
        assert ids(keyword) == sorted(passing_ids)[:want]

        dense = index.search_vector(query, 10, flt)
        assert len(dense) == want
        admitted = [c for c in chunks if c.chunk_id in passing_ids]
        nearest = sorted(admitted, key=lambda c: -float(c.vector @ query))
        assert ids(dense) == [c.chunk_id for c in nearest[:want]]

        if n_passing == 3:
            assert set(ids(keyword)) == passing_ids == set(ids(dense))

    def test_section_filter_is_pre_filtering_too(self, index: Index) -> None:
        doc = meta("d")
        index.upsert(
            [chunk(f"x{i:02}", doc, "needle needle", seq=i, section="Other") for i in range(20)]
            + [chunk("y", doc, "needle and a lot of other words", seq=99, section="Wanted")]
        )
        assert ids(index.search_keyword("needle", 5, IndexFilter(section="wanted"))) == ["y"]
        assert ids(index.search_vector(random_unit("q"), 5, IndexFilter(section="wanted"))) == ["y"]

    def test_mask_cache_sees_documents_added_later(self, index: Index) -> None:
        index.upsert([chunk("a1", meta("a1", tenant="acme")), chunk("g1", meta("g1", tenant="g"))])
        first = IndexFilter(tenant="acme", tags=frozenset())
        assert ids(index.search_keyword("common", 10, first)) == ["a1"]
        assert ids(index.search_vector(random_unit("q"), 10, first)) == ["a1"]

        index.upsert([chunk("a2", meta("a2", tenant="acme")), chunk("g2", meta("g2", tenant="g"))])
        again = IndexFilter(tenant="acme")
        assert again == first  # equal, so a cached mask would be found for it
        assert set(ids(index.search_keyword("common", 10, again))) == {"a1", "a2"}
        assert set(ids(index.search_vector(random_unit("q"), 10, again))) == {"a1", "a2"}

        index.delete_documents(["a1"])
        assert ids(index.search_keyword("common", 10, again)) == ["a2"]

    def test_mask_cache_with_an_access_check(self, index: Index) -> None:
        seen: list[str] = []

        def access(m: DocumentMeta) -> bool:
            seen.append(m.doc_id)
            return "ok" in m.tags

        ok = frozenset({"ok"})
        index.upsert([chunk("c1", meta("d1", tags=ok)), chunk("c2", meta("d2"))])
        flt = IndexFilter(access=access, access_key="has-ok")
        assert ids(index.search_keyword("common", 10, flt)) == ["c1"]

        index.upsert([chunk("c3", meta("d3", tags=ok)), chunk("c4", meta("d4"))])
        equal = IndexFilter(access=access, access_key="has-ok")
        assert set(ids(index.search_keyword("common", 10, equal))) == {"c1", "c3"}
        assert set(ids(index.search_vector(random_unit("q"), 10, equal))) == {"c1", "c3"}
        assert {"d3", "d4"} <= set(seen)  # the new documents were checked

    def test_access_checks_without_a_key_are_never_confused(self, index: Index) -> None:
        index.upsert([chunk("c1", meta("d1")), chunk("c2", meta("d2"))])
        only_d1 = IndexFilter(access=lambda m: m.doc_id == "d1")
        only_d2 = IndexFilter(access=lambda m: m.doc_id == "d2")
        assert ids(index.search_keyword("common", 10, only_d1)) == ["c1"]
        assert ids(index.search_keyword("common", 10, only_d2)) == ["c2"]
        assert ids(index.search_vector(random_unit("q"), 10, only_d1)) == ["c1"]
        assert ids(index.search_vector(random_unit("q"), 10, only_d2)) == ["c2"]

    # -- threads -----------------------------------------------------------------------------

    def test_concurrent_writers_and_readers(self, index: Index) -> None:
        def write(worker: int) -> None:
            for i in range(10):
                doc = meta(f"w{worker}-{i}", tenant=f"t{worker}")
                index.upsert([chunk(f"w{worker}-{i}", doc, f"common worker{worker}")])
                if i % 3 == 2:
                    index.replace_document(doc.doc_id, [chunk(f"w{worker}-{i}", doc, "common")])

        def read(worker: int) -> None:
            flt = IndexFilter(tenant=f"t{worker}")
            for _ in range(30):
                for hit in index.search_keyword("common", 50, flt):
                    assert hit.chunk.doc.tenant == f"t{worker}"
                for hit in index.search_vector(random_unit("q"), 50, flt):
                    assert hit.chunk.doc.tenant == f"t{worker}"

        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [pool.submit(write, w) for w in range(4)]
            futures += [pool.submit(read, w) for w in range(4)]
            for future in futures:
                future.result()
        assert index.count() == 40
        for w in range(4):
            hits = index.search_keyword("common", 50, IndexFilter(tenant=f"t{w}"))
            assert sorted(ids(hits)) == sorted(f"w{w}-{i}" for i in range(10))
            assert len(index.search_keyword(f"worker{w}", 50)) == 10 - 3

    # -- compaction --------------------------------------------------------------------------

    def test_results_after_many_removals(self, index: Index) -> None:
        """Over a thousand dead chunks (MemoryIndex compacts its slots): every survivor is still
        found by its own term and its own vector, and nothing removed comes back."""
        total, dropped = 1300, 1200
        chunks = [chunk(f"c{i}", meta(f"d{i}"), f"common w{i}") for i in range(total)]
        index.upsert(chunks)
        assert index.delete_documents([f"d{i}" for i in range(dropped)]) == dropped
        assert index.count() == total - dropped
        survivors = {f"c{i}" for i in range(dropped, total)}
        assert set(ids(index.search_keyword("common", 5000))) == survivors
        assert set(ids(index.search_vector(random_unit("q"), 5000))) == survivors
        assert index.search_keyword("w5 w1199", 10) == []
        for i in range(dropped, total, 7):
            assert ids(index.search_keyword(f"w{i}", 3)) == [f"c{i}"]
            hit = index.search_vector(random_unit(f"c{i}"), 1)[0]
            assert hit.chunk.chunk_id == f"c{i}"
            assert hit.score == pytest.approx(1.0, abs=1e-5)
        flt = IndexFilter(doc_ids=frozenset({"d5", f"d{total - 1}"}))
        assert ids(index.search_keyword("common", 10, flt)) == [f"c{total - 1}"]

        index.upsert([chunk("late", meta("late"), "common latecomer")])
        assert ids(index.search_keyword("latecomer", 3)) == ["late"]
        assert ids(index.search_vector(random_unit("late"), 1)) == ["late"]
        assert index.count() == total - dropped + 1

    def test_results_after_many_replacements(self, index: Index) -> None:
        doc = meta("d")
        for rnd in range(25):
            index.upsert(
                [
                    chunk(
                        f"c{i}", doc, f"round{rnd} item{i}", seq=i, vector=random_unit(f"{rnd}-{i}")
                    )
                    for i in range(50)
                ]
            )
        assert index.count() == 50
        assert [c.text for c in index.chunks_of("d")] == [f"round24 item{i}" for i in range(50)]
        assert index.search_keyword("round23", 100) == []
        assert len(index.search_keyword("round24", 100)) == 50
        for i in range(0, 50, 5):
            assert ids(index.search_vector(random_unit(f"24-{i}"), 1)) == [f"c{i}"]
