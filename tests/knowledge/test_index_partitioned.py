"""PartitionedIndex: one table per tenant and source, the index contract, and routing."""

from __future__ import annotations

import pytest
from index_contract import IndexContract, chunk, ids, meta, random_unit

from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexFilter
from bastion.knowledge.index.partitioned import PartitionedIndex, table_name


class TestPartitionedIndex(IndexContract):
    @pytest.fixture
    def index(self) -> PartitionedIndex:
        return PartitionedIndex(lambda name: MemoryIndex())


def _two_tenants() -> tuple[PartitionedIndex, dict[str, MemoryIndex]]:
    made: dict[str, MemoryIndex] = {}

    def factory(name: str) -> MemoryIndex:
        made[name] = MemoryIndex()
        return made[name]

    index = PartitionedIndex(factory)
    index.upsert(
        [
            chunk("a1", meta("da", path="/hr/a.md", tenant="acme"), "salary review"),
            chunk("b1", meta("db", path="/hr/b.md", tenant="globex"), "salary review"),
            chunk("s1", meta("ds", path="/pub/s.md"), "salary review shared"),
            chunk("e1", meta("de", path="/eng/e.md", tenant="acme"), "salary review eng"),
        ]
    )
    return index, made


def test_tables_follow_the_naming_scheme() -> None:
    _, made = _two_tenants()
    assert sorted(made) == [
        "chunks__tenant_acme__src_eng",
        "chunks__tenant_acme__src_hr",
        "chunks__tenant_globex__src_hr",
        "chunks__tenant_shared__src_pub",
    ]
    assert table_name("Acme Corp", "/HR Docs") != table_name("acme_corp", "/hr_docs")
    assert table_name("../../etc", "/x").startswith("chunks__tenant_")
    assert "/" not in table_name("../../etc", "/x") and "." not in table_name("a.b", "/x")


def test_a_tenant_filter_never_opens_another_tenants_table() -> None:
    index, made = _two_tenants()
    flt = IndexFilter(tenant="acme")
    assert sorted(index.tables(flt)) == [
        "chunks__tenant_acme__src_eng",
        "chunks__tenant_acme__src_hr",
        "chunks__tenant_shared__src_pub",
    ]
    # Sabotage the other tenant's table: a query for acme must not touch it.
    made["chunks__tenant_globex__src_hr"].search_keyword = None  # type: ignore[method-assign]
    made["chunks__tenant_globex__src_hr"].search_vector = None  # type: ignore[method-assign]
    assert sorted(ids(index.search_keyword("salary", 10, flt))) == ["a1", "e1", "s1"]
    assert "b1" not in ids(index.search_vector(random_unit("b1"), 10, flt))


def test_path_and_sources_narrow_the_tables() -> None:
    index, _ = _two_tenants()
    flt = IndexFilter(tenant="acme", path_prefix="/hr")
    assert index.tables(flt) == ["chunks__tenant_acme__src_hr"]
    assert ids(index.search_keyword("salary", 10, flt)) == ["a1"]
    flt = IndexFilter(tenant="acme", sources=frozenset({"/eng", "/pub"}))
    assert sorted(ids(index.search_keyword("salary", 10, flt))) == ["e1", "s1"]


def test_relabelling_to_another_tenant_moves_the_document() -> None:
    index, made = _two_tenants()
    index.replace_documents(["da"], [chunk("a1", meta("da", path="/hr/a.md", tenant="globex"))])
    assert made["chunks__tenant_acme__src_hr"].count() == 0
    assert sorted(ids(index.search_keyword("salary", 10, IndexFilter(tenant="acme")))) == [
        "e1",
        "s1",
    ]
    assert index.chunks_of("da")[0].doc.tenant == "globex"
    assert index.delete_documents(["da", "db"]) == 2
    assert index.count() == 2


def test_lance_tables_reopen_with_their_partitions(tmp_path) -> None:
    root = tmp_path / "lance"

    def factory(name: str) -> LanceIndex:
        return LanceIndex(root / name, dim=None, embedder=None)

    index = PartitionedIndex(factory)
    index.upsert(
        [
            chunk("a1", meta("da", path="/hr/a.md", tenant="acme"), "budget plan", vector=False),
            chunk("b1", meta("db", path="/hr/b.md", tenant="globex"), "budget plan", vector=False),
        ]
    )
    index.close()
    again = PartitionedIndex(factory, existing=[factory(p.name) for p in sorted(root.iterdir())])
    assert ids(again.search_keyword("budget", 5, IndexFilter(tenant="globex"))) == ["b1"]
    assert again.tables(IndexFilter(tenant="acme")) == ["chunks__tenant_acme__src_hr"]
