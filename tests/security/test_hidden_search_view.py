"""The search view's memory (``SearchView``, ``HitChecks``) never shows a hit its principal may
not read now, whoever changed the file, however, and whoever searched first.

Red-team variants (area A) of the class *hidden documents on every read path* and *relabelling
through sidecars* (``docs/security.md``). A memory store vouches for a hit's file while its
change mark stays; other stores are looked at on every search. Each attack runs against every
store the suite builds (memory, local disk, SQLite, PostgreSQL, an fsspec filesystem): the
change is made behind the index (another workspace over the same store, another principal's
view, the store itself), right after a search warmed the memory, and the next search must
already hide the hit.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.models import Labels
from bastion.core.paths import VPath
from bastion.core.policy import Rule
from bastion.core.ports import Store
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.stores.sqlite import SqliteStore

P = VPath.parse
ADMIN = Principal.of("admin", clearance="restricted", roles=["hr"])
READER = Principal.of("reader", clearance="internal")
OPEN = "# Plan\n\nlaunch plan for orbit\n"
SECRET = "---\nclassification: restricted\n---\n# Plan\n\nlaunch plan for orbit\n"

STORES = ["memory", "local", "sqlite", "postgres", "fsspec"]


@pytest.fixture(params=STORES)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    kind = str(request.param)
    made: list[Store] = []

    def build() -> Store:
        store: Store
        if kind == "memory":
            store = MemoryStore()
        elif kind == "local":
            root = tmp_path / "local"
            root.mkdir(exist_ok=True)
            store = LocalStore(root)
        elif kind == "sqlite":
            store = SqliteStore(tmp_path / "ws.db")
        elif kind == "postgres":
            from bastion.stores.postgres import PostgresStore

            store = PostgresStore(request.getfixturevalue("pg_dsn"))
        else:
            import fsspec

            from bastion.stores.fsspec import FsspecStore

            store = FsspecStore(fsspec.filesystem("memory"), root=f"/redteam-{uuid.uuid4().hex}")
        made.append(store)
        return store

    yield build
    for store in made:
        close = getattr(store, "close", None)
        done = close() if close is not None else None
        if inspect.isawaitable(done):
            asyncio.run(done)  # type: ignore[arg-type]


def _ws(store: Store, knowledge: Knowledge | None = None, **kw: object) -> Workspace:
    return Workspace(
        [Mount.of("/docs", store, **kw)],  # type: ignore[arg-type]
        policy=Policy.allow_all(),
        knowledge=knowledge if knowledge is not None else Knowledge(MemoryIndex()),
        principal=ADMIN,
    )


def _paths(result: object) -> list[str]:
    return sorted(h.path for h in result.hits)  # type: ignore[attr-defined]


async def _warm(ws: Workspace) -> Workspace:
    """Write the open page and search it twice as the reader (the second from memory)."""
    await ws.write("/docs/plan.md", OPEN)
    reader = ws.with_principal(READER)
    for _ in range(2):
        assert _paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.md"]
    return reader


async def test_a_sidecar_written_through_another_workspace_hides_the_hit(
    make: Callable[[], Store],
) -> None:
    store = make()
    reader = await _warm(_ws(store))
    other = _ws(store)  # another workspace over the same store, its own index
    await other.write("/docs/plan.md.labels.yaml", "classification: restricted\n")
    assert _paths(await reader.search("orbit", mode="bm25")) == []


async def test_front_matter_tightened_through_another_principals_view_hides_the_hit(
    make: Callable[[], Store],
) -> None:
    store = make()
    ws = _ws(store)
    reader = await _warm(ws)
    await ws.with_principal(Principal.of("boss", clearance="restricted")).write(
        "/docs/plan.md", SECRET
    )
    assert _paths(await reader.search("orbit", mode="bm25")) == []
    assert _paths(await reader.search("launch plan", mode="bm25")) == []


async def test_deleted_and_recreated_stricter_behind_the_index_is_hidden(
    make: Callable[[], Store],
) -> None:
    store = make()
    reader = await _warm(_ws(store))
    await store.delete(P("/plan.md"))
    await store.write(P("/plan.md"), SECRET.encode())
    assert _paths(await reader.search("orbit", mode="bm25")) == []


async def test_a_stricter_file_moved_onto_the_path_behind_the_index_is_hidden(
    make: Callable[[], Store],
) -> None:
    store = make()
    reader = await _warm(_ws(store))
    await store.write(P("/secret.md"), SECRET.encode())
    await store.delete(P("/plan.md"))
    await store.rename(P("/secret.md"), P("/plan.md"))
    assert _paths(await reader.search("orbit", mode="bm25")) == []


async def test_a_sidecar_written_straight_to_the_store_hides_the_hit(
    make: Callable[[], Store],
) -> None:
    store = make()
    reader = await _warm(_ws(store))
    await store.write(P("/plan.md.labels.yaml"), b"roles: [hr]\n")
    assert _paths(await reader.search("orbit", mode="bm25")) == []
    assert _paths(await reader.search("orbit", mode="bm25", path="/docs")) == []


async def test_a_hit_warmed_by_a_cleared_principal_is_not_shown_to_a_lower_one(
    make: Callable[[], Store],
) -> None:
    store = make()
    ws = _ws(store)
    await ws.write("/docs/plan.md", SECRET)
    boss = ws.with_principal(Principal.of("boss", clearance="restricted"))
    for _ in range(2):
        assert _paths(await boss.search("orbit", mode="bm25")) == ["/docs/plan.md"]
    # the same id with a lower clearance, another id with the same roles, another tenant
    for other in (
        Principal.of("boss", clearance="internal"),
        Principal.of("eve", clearance="internal", roles=["hr"]),
        Principal.of("boss", clearance="restricted", tenant="globex"),
    ):
        view = ws.with_principal(other)
        expected = ["/docs/plan.md"] if other.tenant == "globex" else []  # untenanted page
        assert _paths(await view.search("orbit", mode="bm25")) == expected


async def test_a_shared_knowledge_with_a_stricter_mount_never_shows_the_looser_labels(
    make: Callable[[], Store],
) -> None:
    """Two workspaces share one Knowledge over the same store; the second's mount is
    confidential by default. Its reader never sees the page, whichever indexed it last (the
    first's reader may miss it while the second's labels are in the index: one index per
    labelling is the supported set-up, the point here is that nothing leaks)."""
    store = make()
    knowledge = Knowledge(MemoryIndex())
    loose = _ws(store, knowledge)
    strict = _ws(store, knowledge, labels=Labels(classification="confidential"))
    await loose.write("/docs/plan.md", OPEN)
    loose_reader = loose.with_principal(READER)
    strict_reader = strict.with_principal(READER)
    assert _paths(await loose_reader.search("orbit", mode="bm25")) == ["/docs/plan.md"]
    for _ in range(3):
        await loose_reader.search("orbit", mode="bm25")  # may index the looser labels again
        assert _paths(await strict_reader.search("orbit", mode="bm25")) == []
        for hit in (await strict.search("orbit", mode="bm25")).hits:
            assert hit.labels.classification == "confidential"


async def test_a_deny_rule_hides_a_hit_already_vouched_for_another_principal(
    make: Callable[[], Store],
) -> None:
    policy = Policy(
        rules=(
            Rule.deny(["read"], "/docs/plan.md", principals=["mallory"]),
            Rule.allow(["read", "write", "search", "list"], "/**"),
        )
    )
    ws = Workspace(
        [Mount.of("/docs", make())],
        policy=policy,
        knowledge=Knowledge(MemoryIndex()),
        principal=ADMIN,
    )
    await ws.write("/docs/plan.md", OPEN)
    reader = ws.with_principal(READER)
    for _ in range(2):
        assert _paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.md"]
    mallory = ws.with_principal(Principal.of("mallory", clearance="restricted"))
    for _ in range(2):
        assert _paths(await mallory.search("orbit", mode="bm25")) == []
        assert _paths(await mallory.search("orbit", mode="bm25", path="/docs")) == []


async def test_front_matter_edited_in_place_with_the_same_size_and_mtime_is_seen(
    tmp_path: Path,
) -> None:
    """Local disk: another program rewrites the front matter in place (same inode, same
    size) and puts the modification time back. The next search, the read and the stat all
    use the new labels."""
    root = tmp_path / "disk"
    root.mkdir()
    ws = _ws(LocalStore(root))
    page = "---\nroles: [all]\n---\n# Plan\n\nlaunch plan for orbit\n"
    await ws.write("/docs/plan.md", page)
    reader = ws.with_principal(Principal.of("reader", clearance="internal", roles=["all"]))
    for _ in range(2):
        assert _paths(await reader.search("orbit", mode="bm25")) == ["/docs/plan.md"]
    assert (await reader.read_text("/docs/plan.md")).startswith("---")
    target = root / "plan.md"
    before = target.stat()
    with open(target, "r+b") as handle:  # in place: no new inode, same size
        handle.write(page.replace("[all]", "[hr_]").encode())
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert _paths(await reader.search("orbit", mode="bm25")) == []
    assert not await reader.exists("/docs/plan.md")


@pytest.mark.parametrize("first", ["open", "strict"])
async def test_two_workspaces_with_other_policies_share_a_knowledge_and_a_principal(
    make: Callable[[], Store], first: str
) -> None:
    """One Knowledge, one store, one principal, two workspaces whose policies differ (one
    denies /docs/secret): whichever searched first (warming masks, filters, vouched files),
    the strict one never shows the denied page."""
    store = make()
    knowledge = Knowledge(MemoryIndex())
    strict_policy = Policy(
        rules=(
            Rule.deny(["read", "search"], "/docs/secret/**"),
            Rule.allow(["read", "write", "search", "list"], "/**"),
        )
    )
    open_ws = _ws(store, knowledge)
    strict_ws = Workspace(
        [Mount.of("/docs", store)], policy=strict_policy, knowledge=knowledge, principal=ADMIN
    )
    await open_ws.write("/docs/secret/plan.md", OPEN)
    await open_ws.write("/docs/plan.md", OPEN)
    views = {"open": open_ws.with_principal(READER), "strict": strict_ws.with_principal(READER)}
    order = [first, "strict" if first == "open" else "open"]
    for _ in range(2):
        for name in order:
            found = _paths(await views[name].search("orbit", mode="bm25"))
            if name == "strict":
                assert found == ["/docs/plan.md"]
            else:
                assert found == ["/docs/plan.md", "/docs/secret/plan.md"]
