"""PostgresStore against the shared store contract, on a real PostgreSQL, with the default
chunk size and with an odd, small one that puts chunk boundaries in the middle of every range
the suite reads; then what is particular to PostgreSQL (namespaces, schema, chunks, labels).

The contract classes share one database per module and give each test a namespace of its
own: a fresh, empty filesystem as the contract needs, without creating a database per test,
and proof in passing that many namespaces live side by side in one database. The other tests
take a fresh database each (``pg_dsn``), since they look at the tables."""

from __future__ import annotations

import asyncio
import gc
import random
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    InvalidPathError,
    NotADirectoryError_,
    NotFoundError,
    StoreError,
)
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.stores._pg_schema import SCHEMA_VERSION
from bastion.stores.postgres import PostgresStore
from bastion.workspace import Workspace

from .store_contract import StoreContract


@pytest.fixture(scope="module")
def module_dsn(pg_server: Any) -> Iterator[str]:
    """A database for this module's contract tests (each uses a namespace of its own)."""
    name = f"m_{uuid.uuid4().hex[:12]}"
    pg_server.psql(f"CREATE DATABASE {name};")
    try:
        yield pg_server.get_uri().replace("/postgres?", f"/{name}?", 1)
    finally:
        pg_server.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}';"
        )
        pg_server.psql(f"DROP DATABASE IF EXISTS {name};")


class TestPostgresStore(StoreContract):
    @pytest.fixture
    async def store(self, module_dsn: str) -> AsyncIterator[PostgresStore]:
        store = PostgresStore(module_dsn, namespace=f"t-{uuid.uuid4().hex}", timeout=30.0)
        yield store
        await store.close()


class TestPostgresStoreSmallChunks(StoreContract):
    """Chunks of 4099 bytes (a prime): reads, appends and copies cross chunk boundaries at
    offsets that no power of two lines up with."""

    @pytest.fixture
    async def store(self, module_dsn: str) -> AsyncIterator[PostgresStore]:
        namespace = f"small-{uuid.uuid4().hex}"
        store = PostgresStore(module_dsn, namespace=namespace, chunk_size=4099, timeout=30.0)
        yield store
        await store.close()


# == PostgreSQL specifics ====================================================================

P = VPath.parse


@pytest.fixture
async def make_store(pg_dsn: str) -> AsyncIterator[Callable[..., PostgresStore]]:
    """Stores on the test's database (closed afterwards); keyword arguments as for the class."""
    made: list[PostgresStore] = []

    def make(dsn: str = pg_dsn, **options: Any) -> PostgresStore:
        options.setdefault("timeout", 30.0)
        store = PostgresStore(dsn, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


def sql(dsn: str, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on a connection of its own; the rows it returns, if any."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


# -- namespaces: one database, many filesystems, no leaks (deepagents #2884, #5711) ----------

NAMESPACES = ["acme", "acme2", "acme/child", "acme.", "acm%", "acme_", "ACME", "a'b", "%"]
"""Names that are prefixes, patterns (LIKE wildcards) and case variants of one another."""


async def test_namespaces_never_see_each_other(make_store: Callable[..., PostgresStore]) -> None:
    stores = {name: make_store(namespace=name) for name in NAMESPACES}
    versions: dict[str, str | None] = {}
    for n, (name, store) in enumerate(stores.items()):
        await store.mkdir(P("/shared"))
        written = await store.write(P("/shared/doc.txt"), f"owned by {name}".encode())
        versions[name] = written.version
        await store.write(P(f"/only-{n}.txt"), name.encode())
    for n, (name, store) in enumerate(stores.items()):
        assert await store.read_all(P("/shared/doc.txt")) == f"owned by {name}".encode()
        assert {i.path.name for i in await store.list(VPath.ROOT)} == {"shared", f"only-{n}.txt"}
        walked = {str(i.path) async for i in store.walk()}
        assert walked == {"/shared", "/shared/doc.txt", f"/only-{n}.txt"}
        for other in range(len(NAMESPACES)):
            if other == n:
                continue
            foreign = P(f"/only-{other}.txt")
            assert not await store.exists(foreign)
            with pytest.raises(NotFoundError):
                await store.read_all(foreign)
            with pytest.raises(NotFoundError):
                await store.delete(foreign)
            with pytest.raises(NotFoundError):
                await store.rename(foreign, P("/stolen.txt"))
            with pytest.raises(NotFoundError):
                await store.set_labels(foreign, Labels(classification="public"))
        for other_name, version in versions.items():
            if other_name != name:  # another namespace's version never matches here
                with pytest.raises(ConflictError):
                    await store.write(P("/shared/doc.txt"), b"stale", if_version=version)


async def test_destructive_calls_stay_in_their_namespace(
    make_store: Callable[..., PostgresStore],
) -> None:
    stores = {name: make_store(namespace=name) for name in NAMESPACES}
    for name, store in stores.items():
        await store.makedirs(P("/shared/deep"))
        await store.write(P("/shared/deep/doc.txt"), name.encode())
    await stores["acme"].delete(P("/shared"), recursive=True)
    await stores["acme/child"].rename(P("/shared"), P("/moved"))
    await stores["%"].set_labels(P("/shared/deep/doc.txt"), Labels(classification="restricted"))
    await stores["acm%"].write(P("/shared/deep/doc.txt"), b"overwritten")
    assert not await stores["acme"].exists(P("/shared"))
    assert await stores["acme/child"].read_all(P("/moved/deep/doc.txt")) == b"acme/child"
    assert await stores["acm%"].read_all(P("/shared/deep/doc.txt")) == b"overwritten"
    for name in set(NAMESPACES) - {"acme", "acme/child", "acm%"}:
        info, data = await stores[name].read_file(P("/shared/deep/doc.txt"))
        assert data == name.encode()
        assert info.labels == (Labels(classification="restricted") if name == "%" else None)


# -- schema: created, versioned, migrated once ------------------------------------------------


async def test_schema_is_created_and_its_version_recorded(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    await make_store().write(P("/a"), b"a")
    assert sql(pg_dsn, "SELECT version FROM bastion_fs_schema") == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in sql(pg_dsn, "SELECT tablename FROM pg_tables")}
    assert {"bastion_fs_namespaces", "bastion_fs_entries", "bastion_fs_chunks"} <= tables
    second = make_store(namespace="second")  # a new pool against a migrated database
    await second.write(P("/b"), b"b")
    assert await make_store().read_all(P("/a")) == b"a"
    assert sql(pg_dsn, "SELECT version FROM bastion_fs_schema") == [(SCHEMA_VERSION,)]


async def test_many_stores_first_use_at_once(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    stores = [make_store(namespace=f"ns{n % 3}") for n in range(8)]
    await asyncio.gather(*(s.write(P(f"/f{n}"), b"%d" % n) for n, s in enumerate(stores)))
    assert sql(pg_dsn, "SELECT version FROM bastion_fs_schema") == [(SCHEMA_VERSION,)]
    assert sql(pg_dsn, "SELECT count(*) FROM bastion_fs_namespaces") == [(3,)]
    for n, store in enumerate(stores):
        assert await store.read_all(P(f"/f{n}")) == b"%d" % n


async def test_a_newer_schema_is_refused(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    await make_store().write(P("/a"), b"a")
    sql(pg_dsn, "UPDATE bastion_fs_schema SET version = version + 1")
    with pytest.raises(ConfigurationError, match="upgrade Bastion"):
        await make_store(namespace="later").stat(P("/a"))


# -- chunks: ranges fetch only what covers them, appends touch only the tail ------------------


def _chunks(dsn: str, path: str) -> dict[int, str]:
    """idx -> xmin (the transaction that last wrote the chunk row) of a file's chunks."""
    rows = sql(
        dsn,
        "SELECT c.idx, c.xmin::text FROM bastion_fs_chunks c JOIN bastion_fs_entries e "
        "ON c.content = e.content WHERE e.path = %s",
        (path,),
    )
    return dict(rows)


async def test_range_reads_fetch_only_the_covering_chunks(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store(chunk_size=7)
    data = bytes(range(100))
    await store.write(P("/f"), data)
    assert sorted(_chunks(pg_dsn, "/f")) == list(range(15))
    # Keep only chunks 2..4 (bytes 14..34): reads inside them cannot have needed the others.
    sql(pg_dsn, "DELETE FROM bastion_fs_chunks WHERE idx NOT BETWEEN 2 AND 4")
    assert await store.read_range(P("/f"), 15, 10) == data[15:25]
    assert await store.read_range(P("/f"), 14, 21) == data[14:35]
    assert (await store.read_file(P("/f"), 20, 3, check=lambda _: None))[1] == data[20:23]
    with pytest.raises(StoreError):  # a range that needs a missing chunk does notice
        await store.read_range(P("/f"), 30, 10)


@pytest.mark.parametrize(("size", "added"), [(30, 10), (35, 3), (0, 20), (30, 1)])
async def test_append_rewrites_only_the_tail_chunk(
    pg_dsn: str, make_store: Callable[..., PostgresStore], size: int, added: int
) -> None:
    store = make_store(chunk_size=7)
    first, more = bytes(range(size)), bytes(range(200, 200 + added))
    await store.write(P("/log"), first)
    before = _chunks(pg_dsn, "/log")
    await store.write(P("/log"), more, mode=WriteMode.APPEND)
    after = _chunks(pg_dsn, "/log")
    assert sorted(after) == list(range(-(-(size + added) // 7)))
    full_chunks = size // 7  # chunks before the tail: never rewritten
    assert {i: after[i] for i in range(full_chunks)} == {i: before[i] for i in range(full_chunks)}
    assert await store.read_all(P("/log")) == first + more
    seam = max(size - 3, 0)
    assert await store.read_range(P("/log"), seam, 6) == (first + more)[seam : seam + 6]


async def test_overwrite_and_delete_leave_no_orphan_chunks(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store(chunk_size=7)
    await store.makedirs(P("/d/e"))
    await store.write(P("/d/e/f"), b"x" * 70)
    await store.write(P("/d/e/f"), b"y" * 15)
    await store.write(P("/d/g"), b"z" * 8)
    assert sql(pg_dsn, "SELECT count(*) FROM bastion_fs_chunks") == [(3 + 2,)]
    await store.delete(P("/d/g"))
    assert sql(pg_dsn, "SELECT count(*) FROM bastion_fs_chunks") == [(3,)]
    await store.delete(P("/d"), recursive=True)
    assert sql(pg_dsn, "SELECT count(*) FROM bastion_fs_chunks") == [(0,)]
    assert sql(pg_dsn, "SELECT count(*) FROM bastion_fs_entries") == [(0,)]


async def test_a_file_keeps_the_chunk_size_it_was_written_with(
    make_store: Callable[..., PostgresStore],
) -> None:
    await make_store(chunk_size=7).write(P("/f"), b"0123456789")
    wider = make_store(chunk_size=16)
    await wider.write(P("/f"), b"abcdefghij", mode=WriteMode.APPEND)
    assert await wider.read_range(P("/f"), 5, 10) == b"56789abcde"
    await wider.write(P("/f"), b"fresh content, wider chunks")
    assert await make_store(chunk_size=7).read_all(P("/f")) == b"fresh content, wider chunks"


# -- versions, labels, metadata ---------------------------------------------------------------


async def test_versions_are_a_database_wide_counter(
    make_store: Callable[..., PostgresStore],
) -> None:
    a, b = make_store(namespace="a"), make_store(namespace="b")
    seen = [int(str((await store.write(P("/v"), b"x")).version)) for store in (a, b, a, b, a)]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


async def test_labels_travel_with_the_entry(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    assert store.keeps_labels
    await store.mkdir(P("/d"))
    written = await store.write(P("/d/report.md"), b"numbers")
    assert written.labels is None
    secret = Labels(tenant="acme", classification="confidential", roles=frozenset({"finance"}))
    labelled = await store.set_labels(P("/d/report.md"), secret)
    assert labelled.labels == secret and labelled.version == written.version
    assert (await store.stat(P("/d/report.md"))).labels == secret
    assert [i.labels for i in await store.list(P("/d"))] == [secret]
    seen: list[FileInfo] = []
    await store.read_file(P("/d/report.md"), check=seen.append)
    assert seen[0].labels == secret
    await store.rename(P("/d"), P("/moved"))
    assert (await store.stat(P("/moved/report.md"))).labels == secret
    appended = await store.write(P("/moved/report.md"), b"!", mode=WriteMode.APPEND)
    assert appended.labels == secret  # content changes keep the labels
    await store.set_labels(P("/moved"), Labels(classification="internal"))
    assert (await store.stat(P("/moved"))).labels == Labels(classification="internal")
    await store.set_labels(P("/moved/report.md"), None)
    assert (await store.stat(P("/moved/report.md"))).labels is None
    with pytest.raises(NotFoundError):
        await store.set_labels(P("/nope"), secret)
    with pytest.raises(NotADirectoryError_):
        await store.set_labels(P("/moved/report.md/x"), secret)


async def test_metadata_round_trips(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    written = await store.write(P("/a.md"), b"text")
    assert await store.metadata(P("/a.md")) == {}
    meta = {"source": "wiki", "pages": 3, "authors": ["ann", "bo"], "draft": False}
    info = await store.set_metadata(P("/a.md"), meta)
    assert info.version == written.version
    assert await store.metadata(P("/a.md")) == meta
    assert await make_store().metadata(P("/a.md")) == meta  # stored, not cached
    await store.set_metadata(P("/a.md"), {})
    assert await store.metadata(P("/a.md")) == {}
    with pytest.raises(NotFoundError):
        await store.metadata(P("/nope"))
    with pytest.raises(NotFoundError):
        await store.set_metadata(P("/nope"), meta)


async def test_the_guard_applies_stored_labels(make_store: Callable[..., PostgresStore]) -> None:
    store = make_store()
    await store.write(P("/open.md"), b"open")
    await store.write(P("/secret.md"), b"secret")
    await store.set_labels(P("/secret.md"), Labels(classification="confidential"))
    ws = Workspace(
        [Mount.of("/pg", store)],
        policy=Policy.allow_all(),
        principal=Principal.of("intern", clearance="public"),
    )
    assert [str(i.path) for i in await ws.list("/pg")] == ["/pg/open.md"]
    assert await ws.read_text("/pg/open.md") == "open"
    with pytest.raises(NotFoundError):
        await ws.read_text("/pg/secret.md")
    cleared = ws.with_principal(Principal.of("cfo", clearance="confidential"))
    assert await cleared.read_text("/pg/secret.md") == "secret"


# -- configuration and edges ------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"chunk_size": 0},
        {"pool_min": 3, "pool_max": 2},
        {"pool_max": 0},
        {"timeout": 0},
        {"namespace": ""},
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        PostgresStore("postgresql://u@localhost/db", **options)


def test_dsn_errors_and_descriptions_never_show_the_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        PostgresStore("host=x password=hunter2 port='unterminated")
    assert "hunter2" not in str(caught.value)
    store = PostgresStore("postgresql://user:hunter2@db.internal:5432/files", namespace="team")
    assert store.kind == "postgres"
    assert "hunter2" not in store.describe() and "db.internal" not in store.describe()


async def test_a_path_too_long_for_the_index_is_refused_plainly(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    parts = [random.Random(n).randbytes(100).hex()[:200] for n in range(15)]  # 3,015 bytes
    deep = P("/" + "/".join(parts))
    await store.makedirs(deep.parent.parent)
    with pytest.raises(InvalidPathError, match="too long"):
        await store.makedirs(deep.parent)
    assert await store.exists(deep.parent.parent)


async def test_write_can_label_in_the_same_transaction(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    restricted, internal = Labels(classification="restricted"), Labels(classification="internal")
    assert (await store.write(P("/a"), b"x", labels=restricted)).labels == restricted
    assert (await store.write(P("/a"), b"y")).labels == restricted  # an overwrite keeps them
    appended = await store.write(P("/a"), b"z", mode=WriteMode.APPEND, labels=internal)
    assert appended.labels == internal
    with pytest.raises(AlreadyExistsError):
        await store.write(P("/a"), b"q", mode=WriteMode.CREATE, labels=restricted)
    info, data = await store.read_file(P("/a"))
    assert (info.labels, data) == (internal, b"yz")  # the refused write changed nothing
    await store.delete(P("/a"))
    assert (await store.write(P("/a"), b"new")).labels is None  # deleting dropped them


async def test_a_store_dropped_without_close_stops_its_thread(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, timeout=30.0)
    await store.write(P("/a"), b"a")
    thread = store._rt._thread
    assert thread is not None and thread.is_alive()
    del store
    gc.collect()
    thread.join(timeout=30)
    assert not thread.is_alive()


async def test_a_role_that_may_not_create_tables_uses_a_migrated_database(
    pg_dsn: str, make_store: Callable[..., PostgresStore]
) -> None:
    await make_store().write(P("/by-admin.txt"), b"schema made by the admin")
    role = f"app_{uuid.uuid4().hex[:8]}"
    sql(pg_dsn, f"CREATE ROLE {role} LOGIN")
    try:
        sql(pg_dsn, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        sql(
            pg_dsn, f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"
        )
        sql(pg_dsn, f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}")
        app = make_store(dsn=pg_dsn.replace("postgres:@", f"{role}:@", 1), namespace="app")
        await app.mkdir(P("/d"))
        await app.write(P("/d/f.txt"), b"written by the app role")
        assert await app.read_all(P("/d/f.txt")) == b"written by the app role"
        await app.close()
    finally:
        sql(pg_dsn, f"DROP OWNED BY {role}")
        sql(pg_dsn, f"DROP ROLE {role}")
