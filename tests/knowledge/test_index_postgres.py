"""PostgresIndex against the index contract on a real PostgreSQL with pgvector, and what only
a shared SQL index has to do: the same BM25 scores as the embedded index, k authorized results
from the HNSW index under a restrictive filter, persistence and sharing across instances,
strict table names, several indexes in one database, and errors translated at the edge."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import numpy as np
import psycopg
import pytest
from index_contract import (
    DIM,
    GUIDE,
    LABELLED,
    IndexContract,
    chunk,
    ids,
    meta,
    random_unit,
    unit,
    write_for_reopen,
)

from bastion.core.errors import ConfigurationError, StoreError, StoreUnavailableError
from bastion.knowledge.engine import FileToIndex, Knowledge
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexedChunk, IndexFilter
from bastion.knowledge.index.partitioned import PartitionedIndex, table_name
from bastion.knowledge.index.postgres import KeywordScoring, PostgresIndex
from pg_support import start_private_pg

EMBEDDER = "test-embedder"


class TestPostgresIndex(IndexContract):
    @pytest.fixture
    def index(self, pg_dsn: str) -> Iterator[PostgresIndex]:
        index = PostgresIndex(pg_dsn, dim=DIM, embedder=EMBEDDER)
        yield index
        index.close()


@pytest.fixture
def opened(pg_dsn: str) -> Iterator[list[PostgresIndex]]:
    """Indexes opened by a test, closed after it."""
    found: list[PostgresIndex] = []
    yield found
    for index in found:
        index.close()


def _open(opened: list[PostgresIndex], dsn: str, **options: object) -> PostgresIndex:
    options.setdefault("dim", DIM)
    options.setdefault("embedder", EMBEDDER)
    index = PostgresIndex(dsn, **options)  # type: ignore[arg-type]
    opened.append(index)
    return index


def _with_options(dsn: str, options: str) -> str:
    """The DSN with server settings for every session (libpq's ``options``)."""
    return f"{dsn}&options={quote(options)}"


def _words(rng: np.random.Generator, vocab: list[str], n: int) -> str:
    return " ".join(rng.choice(vocab, size=n))


# -- BM25: the embedded index's scores, computed in SQL --------------------------------------------


def test_bm25_scores_equal_the_embedded_index(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(40)] + ["running", "runs", "the", "Servers", "server"]
    docs = {f"d{i}": meta(f"d{i}", tenant="acme" if i % 3 else "globex") for i in range(30)}
    chunks = [
        chunk(f"c{i}", docs[f"d{i % 30}"], _words(rng, vocab, int(rng.integers(1, 60))), seq=i)
        for i in range(90)
    ]
    pg, memory = _open(opened, pg_dsn), MemoryIndex()
    for index in (pg, memory):
        index.upsert(chunks)
        index.delete_documents(["d4", "d7"])  # statistics follow removals
        index.upsert([chunk("c1", docs["d1"], "w1 w1 w2 run server")])
    queries = ["w1", "w2 w3 w3", "run servers", "w5 w6 w7 w8 w9 the", "w39 w0"]
    for flt in (None, IndexFilter(tenant="globex"), IndexFilter(doc_ids=frozenset({"d1", "d2"}))):
        for text in queries:
            want = memory.search_keyword(text, 1000, flt)
            got = pg.search_keyword(text, 1000, flt)
            assert {h.chunk.chunk_id: h.score for h in got} == pytest.approx(
                {h.chunk.chunk_id: h.score for h in want}, rel=1e-5
            )
            assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
            assert ids(got[:5]) == ids(pg.search_keyword(text, 5, flt))


def test_bm25_parameters_and_analyzer(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    analyzer = Analyzer(stopwords=frozenset({"common"}))
    pg = _open(opened, pg_dsn, analyzer=analyzer, k1=1.2, b=0.5)
    memory = MemoryIndex(analyzer=analyzer, k1=1.2, b=0.5)
    texts = ["common words here", "words words", "more words and other words in a longer text"]
    for index in (pg, memory):
        index.upsert([chunk(f"c{i}", meta(f"d{i}"), t) for i, t in enumerate(texts)])
    assert pg.search_keyword("common", 5) == []
    got = {h.chunk.chunk_id: h.score for h in pg.search_keyword("words", 5)}
    want = {h.chunk.chunk_id: h.score for h in memory.search_keyword("words", 5)}
    assert got == pytest.approx(want, rel=1e-5)


def test_postgres_full_text_ranking(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn, keyword_scoring="ts_rank_cd")
    assert index.keyword_scoring is KeywordScoring.TS_RANK_CD
    index.upsert(LABELLED)
    index.upsert(
        [
            chunk("strong", meta("s", tenant="acme"), "Solar power: solar panels, solar cells."),
            chunk("weak", meta("w", tenant="acme"), "A garden lamp, solar, among many flowers."),
            chunk("other", meta("o", tenant="globex"), "Solar farms in the desert."),
        ]
    )
    hits = index.search_keyword("solar", 10, IndexFilter(tenant="acme"))
    assert ids(hits) == ["strong", "weak"]
    assert hits[0].score > hits[1].score > 0
    assert set(ids(index.search_keyword("RUNS solar desert", 10))) == {"strong", "weak", "other"}
    flt = IndexFilter(path_prefix="/docs", roles=frozenset({"eng"}))
    assert set(ids(index.search_keyword("common", 100, flt))) == {
        "a",
        "multi-0",
        "multi-1",
        "multi-2",
    }
    with pytest.raises(ConfigurationError, match="keyword scoring"):
        PostgresIndex(pg_dsn, dim=DIM, embedder=EMBEDDER, keyword_scoring="tf-idf")


# -- vectors: HNSW, and k authorized results under a restrictive filter ----------------------------


def _far_and_near(n: int, passing: int) -> tuple[list[IndexedChunk], np.ndarray]:
    """``n`` chunks; the ``passing`` ones (classification internal) point away from the
    query. (A label with no B-tree index of its own: the planner can only walk the graph.)"""
    query = unit([1, 0, 0, 0, 0, 0, 0, 0])
    rng = np.random.default_rng(11)
    chunks = []
    for i in range(n):
        ok = i < passing
        vector = unit((-query if ok else query) + rng.normal(0, 0.3, DIM))
        doc = meta(f"d{i:04}", classification="internal" if ok else "public")
        chunks.append(chunk(f"c{i:04}", doc, "common", vector=vector))
    return chunks, query


@pytest.mark.parametrize("passing", [3, 15, 200])
def test_hnsw_with_a_restrictive_filter_gives_k_authorized_results(
    pg_dsn: str, opened: list[PostgresIndex], passing: int
) -> None:
    """Sequential scans off: every vector search walks the HNSW graph first. The nearest
    chunks to the query are all refused, so the walk finds too few admitted ones; the index
    notices and compares every admitted vector instead."""
    forced = _with_options(pg_dsn, "-c enable_seqscan=off")
    index = _open(opened, forced)
    chunks, query = _far_and_near(2000, passing)
    index.upsert(chunks)
    flt = IndexFilter(classifications=frozenset({"internal"}))

    with psycopg.connect(forced) as conn:  # what a plain HNSW query with the filter returns
        conn.execute("SET hnsw.ef_search = 40")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT chunk_id FROM chunks WHERE classification = 'internal' "
                "ORDER BY embedding <#> %s::vector LIMIT 10",
                [str(query.tolist())],
            )
        )
        assert "hnsw" in plan
        short = conn.execute(
            "SELECT chunk_id FROM chunks WHERE classification = 'internal' "
            "ORDER BY embedding <#> %s::vector LIMIT 10",
            [str(query.tolist())],
        ).fetchall()
        assert len(short) < min(10, passing)  # the hazard is real

    hits = index.search_vector(query, 10, flt)
    admitted = [c for c in chunks if c.doc.classification == "internal"]
    nearest = sorted(admitted, key=lambda c: -float(c.vector @ query))[:10]
    assert ids(hits) == [c.chunk_id for c in nearest]
    assert all(h.chunk.doc.classification == "internal" for h in hits)
    assert [h.score for h in hits] == pytest.approx([float(c.vector @ query) for c in nearest])


def test_hnsw_serves_unfiltered_searches(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    forced = _with_options(pg_dsn, "-c enable_seqscan=off")
    index = _open(opened, forced, hnsw_m=8)
    chunks, _ = _far_and_near(1500, 0)
    index.upsert(chunks[:10])
    index.upsert(chunks)  # a bulk load: the graph is built again, with the table's parameters
    index.upsert(chunks[-3:])  # and rows added one by one after it
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT pg_get_indexdef(to_regclass('\"chunks$hnsw\"'))").fetchone()
    assert row is not None
    assert "hnsw" in row[0]
    assert "m='8'" in row[0]
    assert index.count() == 1500
    for probe in chunks[::150]:
        assert probe.vector is not None
        hit = index.search_vector(probe.vector, 5)[0]
        assert hit.chunk.chunk_id == probe.chunk_id
        assert hit.score == pytest.approx(1.0, abs=1e-5)
    assert len(index.search_vector(chunks[0].vector, 300)) == 300  # ef_search follows k
    assert len(index.search_vector(chunks[0].vector, 1200)) == 1200  # past HNSW's bound
    with pytest.raises(ValueError, match="dimensions"):
        index.search_vector(np.ones(DIM + 1, dtype=np.float32), 5)


def test_chunks_without_vectors(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    east = unit([1, 0, 0, 0, 0, 0, 0, 0])
    bare = IndexedChunk(chunk_id="b", doc=meta("d"), seq=1, text="plain", start_line=1, end_line=1)
    index.upsert([chunk("v", meta("d"), vector=east), bare])
    assert ids(index.search_vector(east, 10)) == ["v"]
    assert ids(index.search_vector(east, 10, IndexFilter(doc_ids=frozenset({"d"})))) == ["v"]
    assert [c.vector is None for c in index.chunks_of("d")] == [False, True]
    assert ids(index.search_keyword("plain", 5)) == ["b"]


def test_keyword_only_index(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn, dim=None, embedder=None)
    index.upsert([chunk("v", meta("d"), "has a vector anyway")])
    assert index.search_vector(random_unit("v"), 5) == []
    assert index.chunks_of("d")[0].vector is None
    assert ids(_open(opened, pg_dsn, dim=None, embedder=None).search_keyword("vector", 5)) == ["v"]


# -- one shared index, many instances --------------------------------------------------------------


def test_everything_survives_a_reopen(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    write_for_reopen(index)
    before = index.search_keyword("guide", 10)
    index.close()

    again = _open(opened, pg_dsn)
    assert again.count() == 4
    assert again.documents() == {"d": GUIDE, "o": meta("o")}
    assert again.chunks_of("o")[0].section == "Top > Sub"
    after = again.search_keyword("guide", 10)
    assert ids(after) == ids(before)
    assert [h.score for h in after] == pytest.approx([h.score for h in before])
    for c in again.chunks_of("d"):
        assert c.vector is not None
        assert c.vector.tolist() == pytest.approx(random_unit(c.chunk_id).tolist())


def test_two_instances_share_one_index(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    first, second = _open(opened, pg_dsn), _open(opened, pg_dsn)
    first.upsert([chunk("c1", meta("d1", tags=frozenset({"ok"})), "shared words")])
    assert ids(second.search_keyword("shared", 5)) == ["c1"]
    seen: list[str] = []

    def access(m: object) -> bool:
        seen.append(getattr(m, "doc_id", ""))
        return "ok" in getattr(m, "tags", ())

    flt = IndexFilter(access=access, access_key="has-ok")
    assert ids(second.search_keyword("shared", 5, flt)) == ["c1"]
    first.upsert([chunk("c2", meta("d2"), "shared too"), chunk("c3", meta("d3"), "shared")])
    assert ids(second.search_keyword("shared", 5, flt)) == ["c1"]  # the newcomers were checked
    assert seen.count("d1") == 1  # a labelling is checked once per filter
    assert {"d2", "d3"} <= set(seen)
    second.delete_documents(["d1"])
    assert first.search_keyword("shared", 5, flt) == []
    assert first.count() == second.count() == 2


def test_documents_reports_the_latest_labels(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    index.upsert([chunk(f"c{i}", meta("d", version="1"), seq=i) for i in range(3)])
    index.upsert([chunk("c1", meta("d", version="2"), seq=1)])
    assert index.documents()["d"].version == "2"


# -- tables: strict names, several indexes per database, recorded settings -------------------------


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Chunks",
        "chunks; DROP TABLE x",
        'a"b',
        "a b",
        "a$terms",
        "1chunks",
        "pg_chunks",
        "x" * 256,
        "chunks-1",
        "ünicode",
    ],
)
def test_invalid_table_names_are_refused(pg_dsn: str, name: str) -> None:
    with pytest.raises(ConfigurationError, match="table name"):
        PostgresIndex(pg_dsn, table=name, dim=DIM)


def test_several_indexes_in_one_database(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    long = "chunks__tenant_" + "t" * 40 + "__src_s"  # 62 characters: derived names are hashed
    tables = ["chunks__tenant_acme__src_docs", "chunks__tenant_acme__src_wiki", long]
    indexes = {t: _open(opened, pg_dsn, table=t) for t in tables}
    for t, index in indexes.items():
        index.upsert([chunk(f"{t}-c", meta("d"), f"common {t[-4:]}")])
    for t, index in indexes.items():
        assert ids(index.search_keyword("common", 10)) == [f"{t}-c"]
        assert ids(index.search_vector(random_unit(f"{t}-c"), 10)) == [f"{t}-c"]
        assert index.count() == 1
    indexes[tables[0]].clear()
    assert indexes[tables[1]].count() == 1
    assert PostgresIndex.drop(pg_dsn, tables[1])
    assert indexes[long].search_keyword("common", 10) != []
    with psycopg.connect(pg_dsn) as conn:
        names = [r[0] for r in conn.execute("SELECT relname FROM pg_class WHERE relkind = 'r'")]
    assert tables[1] not in names
    assert all(len(n) <= 63 for n in names)


def test_tenant_tables_behind_a_partitioned_index(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    """PartitionedIndex names a table per tenant and source, some over PostgreSQL's 63-byte
    limit: each is its own index, found again by name."""
    tenant = "Acme Research & Development, Europe"
    long = table_name(tenant, "/knowledge-base-of-the-research-department")
    assert len(long) > 63

    def factory(table: str) -> PostgresIndex:
        return _open(opened, pg_dsn, table=table)

    parts = PartitionedIndex(factory)
    parts.upsert(
        [
            chunk(
                "r",
                meta("r", tenant=tenant, path="/knowledge-base-of-the-research-department/r.md"),
            ),
            chunk("h", meta("h", tenant="globex", path="/hr/h.md")),
            chunk("s", meta("s", path="/docs/s.md")),
        ]
    )
    assert set(PostgresIndex.tables(pg_dsn)) == {
        long,
        table_name("globex", "/hr"),
        table_name(None, "/docs"),
    }
    assert ids(parts.search_keyword("common", 10, IndexFilter(tenant=tenant))) in (
        ["r", "s"],
        ["s", "r"],
    )
    again = PartitionedIndex(factory, existing=[factory(t) for t in PostgresIndex.tables(pg_dsn)])
    assert ids(again.search_keyword("common", 10, IndexFilter(tenant="globex"))) in (
        ["h", "s"],
        ["s", "h"],
    )
    assert ids(again.search_vector(random_unit("r"), 1, IndexFilter(tenant=tenant))) == ["r"]
    with psycopg.connect(pg_dsn) as conn:
        names = [r[0] for r in conn.execute("SELECT relname FROM pg_class WHERE relkind = 'r'")]
    assert long not in names  # too long for PostgreSQL: the table has a hashed name
    assert any(n.startswith(long[:52] + "$") for n in names)


def test_sources_filter(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    index.upsert(
        [
            chunk("hr", meta("hr", path="/hr/a.md")),
            chunk("hr2", meta("hr2", path="/hrx/a.md")),
            chunk("top", meta("top", path="/top.md")),
        ]
    )
    for sources, want in [({"/hr"}, {"hr"}), ({"/"}, {"top"}), ({"/hr", "/hrx"}, {"hr", "hr2"})]:
        flt = IndexFilter(sources=frozenset(sources))
        assert set(ids(index.search_keyword("common", 10, flt))) == want
        assert set(ids(index.search_vector(random_unit("q"), 10, flt))) == want
    assert index.search_keyword("common", 10, IndexFilter(sources=frozenset())) == []


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"embedder": "another-embedder"}, "embedder"),
        ({"dim": DIM * 2}, "dim"),
        ({"dim": None}, "dim"),
        ({"analyzer": Analyzer(stopwords=frozenset({"the"}))}, "analyzer"),
    ],
)
def test_a_table_built_differently_is_refused(
    pg_dsn: str, opened: list[PostgresIndex], options: dict[str, object], named: str
) -> None:
    _open(opened, pg_dsn).upsert([chunk("c", meta("d"))])
    with pytest.raises(ConfigurationError, match=named) as err:
        _open(opened, pg_dsn, **options)
    assert "rebuild" in str(err.value)
    assert _open(opened, pg_dsn).count() == 1  # the original settings still open it
    assert PostgresIndex.drop(pg_dsn)
    assert _open(opened, pg_dsn, **options).count() == 0  # rebuilt empty with the new settings


def test_a_foreign_table_is_never_taken_over(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("CREATE TABLE notes (id int)")
    with pytest.raises(ConfigurationError, match="not a Bastion index"):
        PostgresIndex(pg_dsn, table="notes", dim=DIM)
    assert not PostgresIndex.drop(pg_dsn, "notes")
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT to_regclass('notes') IS NOT NULL").fetchone() == (True,)


def test_a_table_dropped_by_hand_is_recreated(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    index.upsert([chunk("c", meta("d"))])
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("DROP TABLE chunks")
    with pytest.raises(StoreError):
        index.search_keyword("common", 5)
    again = _open(opened, pg_dsn)
    assert again.count() == 0
    again.upsert([chunk("c", meta("d"))])
    assert ids(index.search_keyword("common", 5)) == ["c"]


def test_ids_with_quotes_and_backslashes(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    index = _open(opened, pg_dsn)
    doc_id = "it's a \"doc\" \\ with ' quotes''"
    tricky = meta(doc_id, path="/docs/it's.md", tags=frozenset({"o'x"}))
    chunk_ids = ["c'0", 'c"1', "c\\2", "c'')--3"]
    index.upsert([chunk(cid, tricky, f"quoted {i}", seq=i) for i, cid in enumerate(chunk_ids)])
    index.upsert([chunk("safe", meta("o' OR '1'='1"), "quoted bystander")])
    assert len(index.search_keyword("quoted", 10, IndexFilter(tags=frozenset({"o'x"})))) == 4
    assert ids(index.search_keyword("quoted", 10, IndexFilter(path_prefix="/docs/it's.md")))[0]
    index.replace_document(doc_id, [chunk("c'0", tricky, "quoted again", seq=0)])
    assert [c.chunk_id for c in index.chunks_of(doc_id)] == ["c'0"]
    assert index.delete_documents([doc_id]) == 1
    assert index.delete_documents(["o' OR '1'='1"]) == 1
    assert index.count() == 0


def test_nul_characters_are_refused_before_writing(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    index = _open(opened, pg_dsn)
    with pytest.raises(ValueError, match="NUL"):
        index.upsert([chunk("a", meta("d")), chunk("b", meta("d"), "bad\x00text")])
    assert index.count() == 0


async def test_a_knowledge_base_on_postgres(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    """Files in through the ingest pipeline, out through ``Knowledge.search`` with a filter."""
    index = _open(opened, pg_dsn, dim=None, embedder=None)
    kb = Knowledge(index, embedder=None)
    files = [
        FileToIndex("/docs/oncall.md", b"# On call\n\nThe engineer on call answers pages.\n"),
        FileToIndex("/hr/pay.md", b"---\nroles: [hr]\n---\n# Pay\n\nPages of the pay grid.\n"),
    ]
    assert await kb.index_files(files) == [1, 1]
    hits = await kb.search("pages", mode="bm25", flt=IndexFilter(roles=frozenset({"eng"})))
    assert [h.chunk.doc.path for h in hits] == ["/docs/oncall.md"]
    assert {h.chunk.doc.path for h in await kb.search("pages", mode="bm25")} == {
        "/docs/oncall.md",
        "/hr/pay.md",
    }
    assert await kb.remove("/hr/pay.md")
    assert set(index.documents()) == {
        h.chunk.doc.doc_id for h in await kb.search("pages", mode="bm25")
    }


def test_invalid_options(pg_dsn: str) -> None:
    with pytest.raises(ConfigurationError, match="vector size"):
        PostgresIndex(pg_dsn, dim=0)


# -- errors at the edge ----------------------------------------------------------------------------


def test_a_stopped_server_is_reported_as_unavailable() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-"))  # not pytest's: see conftest
    server = start_private_pg(folder)
    try:
        index = PostgresIndex(server.get_uri(), dim=DIM, embedder=EMBEDDER, timeout=2)
        index.upsert([chunk("c", meta("d"))])
        assert index.count() == 1
    finally:
        server.cleanup()
    try:
        with pytest.raises(StoreUnavailableError) as err:
            index.search_keyword("common", 5)
        assert "\n" not in str(err.value)
        assert "retry" in str(err.value)
        with pytest.raises(StoreUnavailableError):
            index.upsert([chunk("c2", meta("d"))])
    finally:
        index.close()
    with pytest.raises(StoreUnavailableError):
        PostgresIndex(server.get_uri(), dim=DIM, timeout=1)
    shutil.rmtree(folder, ignore_errors=True)
