"""One table per tenant and source means *one* — no two partitions share a table name, so no
search of one tenant reads a table holding another tenant's documents, and no table's statistics
or errors tell one tenant of another's tables.

Red-team variants (area A) of the class *hidden documents on every read path*
(``docs/tenancy.md``: "another tenant's table is never read for a query"). Names are reduced to
``[a-z0-9_]``; the tenant-less table is named ``shared`` and the root source ``root``, so a
tenant *called* ``shared`` (or a mount ``/root``) must not land in the same table.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import StoreError
from bastion.core.models import Labels
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.models import IndexFilter
from bastion.knowledge.index.partitioned import PartitionedIndex, table_name

TENANTS = [None, "shared", "Shared", "acme", "acme_hr", "acme-hr", "_", "", "root", "globex"]
SOURCES = ["/", "/root", "/docs", "/Docs", "/shared", "/a_b", "/a-b", "/a__b"]


def test_no_two_partitions_share_a_table_name() -> None:
    names: dict[str, tuple[str | None, str]] = {}
    for tenant, source in itertools.product(TENANTS, SOURCES):
        name = table_name(tenant, source)
        assert names.setdefault(name, (tenant, source)) == (tenant, source), name


def test_a_tenant_spelled_as_another_tenants_hashed_name_gets_its_own_table() -> None:
    """A writer may set ``tenant:`` in front matter where the mount has none: a tenant spelled
    as the reduced, hashed name of another (``acme-hr``) must not land in its table."""
    hashed = table_name("acme-hr", "/x").removeprefix("chunks__tenant_").removesuffix("__src_x")
    assert hashed != "acme_hr"
    assert table_name(hashed, "/x") != table_name("acme-hr", "/x")
    assert table_name("acme_hr", "/x") != table_name("acme-hr", "/x")


def test_a_tenant_named_shared_is_not_the_tenant_less_table() -> None:
    assert table_name("shared", "/docs") != table_name(None, "/docs")
    assert table_name(None, "/docs") == "chunks__tenant_shared__src_docs"  # existing tables


def test_a_mount_named_root_is_not_the_root_source() -> None:
    assert table_name("acme", "/root") != table_name("acme", "/")
    assert table_name("acme", "/") == "chunks__tenant_acme__src_root"  # existing tables


def _keyword_knowledge(folder: Path) -> Knowledge:
    return Knowledge.open(folder, embedder=None)


async def test_a_tenant_called_shared_keeps_its_own_table_on_disk(tmp_path: Path) -> None:
    """On disk (LanceDB), one mount: a tenant-less page and a page of tenant ``shared`` (set by
    its front matter) are two tables; opened again, another tenant's search visits only the
    tenant-less one and still finds its page, and tenant ``shared`` finds both."""
    folder = tmp_path / "index"
    knowledge = _keyword_knowledge(folder)
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        principal=Principal.of("admin", tenant="shared", clearance="restricted"),
    )
    await ws.write("/docs/open.md", "# Open\n\nThe orbit manual for everyone.\n")
    await ws.write("/docs/inner.md", "---\ntenant: shared\n---\n# Inner\n\nThe orbit budget.\n")
    knowledge.close()

    again = _keyword_knowledge(folder)
    try:
        index = again.index
        assert isinstance(index, PartitionedIndex)
        assert sorted(index.partitions(), key=str) == [("shared", "/docs"), (None, "/docs")]
        globex = IndexFilter(tenant="globex")
        assert index.partitions(globex) == [(None, "/docs")]
        hits = index.search_keyword("orbit", 10, globex)
        assert [h.chunk.doc.path for h in hits] == ["/docs/open.md"]
        mine = index.search_keyword("orbit", 10, IndexFilter(tenant="shared"))
        assert sorted(h.chunk.doc.path for h in mine) == ["/docs/inner.md", "/docs/open.md"]
    finally:
        again.close()


@pytest.mark.parametrize("tenant", ["shared", "acme"])
async def test_an_unknown_tenants_search_reports_nothing_of_other_tables(
    tmp_path: Path, tenant: str
) -> None:
    """A tenant with no table of its own gets an empty answer, not an error naming a table."""
    knowledge = _keyword_knowledge(tmp_path / "index")
    ws = Workspace(
        [Mount.of("/team", MemoryStore(), labels=Labels(tenant=tenant))],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        principal=Principal.of("admin", tenant=tenant, clearance="restricted"),
    )
    try:
        await ws.write("/team/inner.md", "# Inner\n\nThe orbit budget.\n")
        other = ws.with_principal(Principal.of("eve", tenant="globex", clearance="restricted"))
        assert (await other.search("orbit", mode="bm25")).hits == ()
        assert (await other.search("budget", mode="bm25", path="/team")).hits == ()
    finally:
        knowledge.close()


def _two_tenants(folder: Path) -> tuple[Knowledge, Workspace, Workspace]:
    knowledge = _keyword_knowledge(folder)
    ws = Workspace(
        [
            Mount.of("/acme", MemoryStore(), labels=Labels(tenant="acme")),
            Mount.of("/globex", MemoryStore(), labels=Labels(tenant="globex")),
        ],
        policy=Policy.allow_all(),
        knowledge=knowledge,
    )
    acme = ws.with_principal(Principal.of("ann", tenant="acme", clearance="restricted"))
    globex = ws.with_principal(Principal.of("gil", tenant="globex", clearance="restricted"))
    return knowledge, acme, globex


def _break(table: Path) -> None:
    """Another process leaves the table unreadable and tells every process it wrote."""
    shutil.rmtree(table / "chunks.lance" / "_versions")
    (table / "bastion-writes.lock").write_bytes(b"999\n")


async def test_another_tenants_broken_table_neither_fails_nor_names_itself(
    tmp_path: Path,
) -> None:
    """A table of tenant globex fails to refresh: tenant acme's searches go on, and globex's
    own search fails in words that name no table (a table's name is a tenant and a source)."""
    knowledge, acme, globex = _two_tenants(tmp_path / "index")
    try:
        await acme.write("/acme/a.md", "# A\n\norbit notes\n")
        await globex.write("/globex/g.md", "# G\n\norbit budget\n")
        _break(tmp_path / "index" / "tables" / table_name("globex", "/globex"))
        for _ in range(2):
            hits = (await acme.search("orbit", mode="bm25")).hits
            assert [h.path for h in hits] == ["/acme/a.md"]
        await acme.write("/acme/b.md", "# B\n\norbit again\n")  # the index follows on
        assert len((await acme.search("orbit", mode="bm25")).hits) == 2
        with pytest.raises(StoreError) as caught:
            await globex.search("orbit", mode="bm25")
        assert "globex" not in str(caught.value) and "chunks__" not in str(caught.value)
    finally:
        knowledge.close()


async def test_another_tenants_table_that_cannot_be_opened_neither_fails_nor_names_itself(
    tmp_path: Path,
) -> None:
    """Another process announced a table this one cannot open (a folder where its lock file
    belongs): the other tenants' searches go on, here and in an index opened afterwards."""
    knowledge, acme, _globex = _two_tenants(tmp_path / "index")
    try:
        await acme.write("/acme/a.md", "# A\n\norbit notes\n")
        tables = tmp_path / "index" / "tables"
        name = table_name("globex", "/globex")
        (tables / name).mkdir()
        (tables / name / "bastion-writes.lock").mkdir()  # a folder: the open fails
        with open(tables / "tables.log", "a", encoding="utf-8") as journal:
            journal.write(name + "\n")
        for _ in range(2):
            hits = (await acme.search("orbit", mode="bm25")).hits
            assert [h.path for h in hits] == ["/acme/a.md"]
    finally:
        knowledge.close()
    again = _keyword_knowledge(tmp_path / "index")  # nor does it keep the index from opening
    try:
        flt = IndexFilter(tenant="acme")
        assert [h.chunk.doc.path for h in again.index.search_keyword("orbit", 5, flt)] == [
            "/acme/a.md"
        ]
        again.index.refresh()
        assert [h.chunk.doc.path for h in again.index.search_keyword("orbit", 5, flt)] == [
            "/acme/a.md"
        ]
    finally:
        again.close()


def _legacy_name(source: str) -> str:
    """The name the rule before 2026-11-26 gave a lossy source (``acme_hr_`` + 32 bits)."""
    import hashlib

    text = source.strip("/")
    digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    return f"chunks__tenant_shared__src_{text.replace('-', '_')}_{digest}"


async def test_a_table_named_by_the_earlier_rule_is_kept_and_opened_once(tmp_path: Path) -> None:
    """Tables are found by the documents they hold: one made under the earlier naming rule
    serves its partition after the rule changed (written, searched, never doubled)."""
    folder = tmp_path / "index"
    knowledge = _keyword_knowledge(folder)
    ws = Workspace(
        [Mount.of("/acme-hr", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=knowledge,
        principal=Principal.of("admin", clearance="restricted"),
    )
    await ws.write("/acme-hr/a.md", "# A\n\norbit notes\n")
    knowledge.close()
    tables = folder / "tables"
    (tables / table_name(None, "/acme-hr")).rename(tables / _legacy_name("/acme-hr"))

    again = _keyword_knowledge(folder)
    try:
        index = again.index
        assert isinstance(index, PartitionedIndex)
        assert index.tables() == [_legacy_name("/acme-hr")]
        with open(tables / "tables.log", "a", encoding="utf-8") as journal:
            journal.write("chunks__tenant_other__src_x\n")  # makes every process look again
        ws = Workspace(
            [Mount.of("/acme-hr", ws.mounts[0].store)],
            policy=Policy.allow_all(),
            knowledge=again,
            principal=Principal.of("admin", clearance="restricted"),
        )
        for _ in range(2):
            hits = (await ws.search("orbit", mode="bm25")).hits
            assert [h.path for h in hits] == ["/acme-hr/a.md"]
        await ws.write("/acme-hr/a.md", "# A\n\norbit notes, edited\n")
        await ws.write("/acme-hr/b.md", "# B\n\norbit again\n")
        hits = (await ws.search("orbit", mode="bm25")).hits
        assert sorted(h.path for h in hits) == ["/acme-hr/a.md", "/acme-hr/b.md"]
        assert index.tables() == [_legacy_name("/acme-hr")]
        assert sorted(p.name for p in tables.iterdir() if p.is_dir()) == [_legacy_name("/acme-hr")]
    finally:
        again.close()
