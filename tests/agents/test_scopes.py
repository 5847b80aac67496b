"""Scoped workspaces: the layout, the overlay (thread, agent, global), ids, and ending a thread.

Every behaviour runs against the memory store and the local store (a real folder); the folder
view that each area is mounted from also passes the whole store contract.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bastion import (
    AlreadyExistsError,
    InvalidPathError,
    Labels,
    LocalStore,
    MemoryStore,
    Mount,
    NoMountError,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    Scope,
    ScopeError,
    Store,
    VPath,
    WriteMode,
)
from bastion.agents.scopes import (
    Area,
    InvalidScopeIdError,
    ScopedWorkspace,
    ScopeKind,
    Scopes,
    validate_scope_id,
)
from bastion.core.errors import ConfigurationError, IsADirectoryError_
from bastion.stores.folder import FolderStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contract.store_contract import StoreContract

P = VPath.parse
BOT = Principal.of("bot", roles={"agent"})


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / "backing", create=True)


async def _put(store: Store, raw: str, text: str) -> None:
    path = P(raw)
    await store.makedirs(path.parent)
    await store.write(path, text.encode())


def _scoped(store: Store, *, thread: str | None = "t1", **options: object) -> ScopedWorkspace:
    scopes = Scopes.on(store, policy=Policy.allow_all(), **options)  # type: ignore[arg-type]
    return scopes.workspace(BOT, agent_id="bot", thread_id=thread)


# -- ids ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("good", ["t1", "thread-42", "A.b_c-9", "0", "x" * 128])
def test_valid_ids_pass(good: str) -> None:
    assert validate_scope_id(good, "thread id") == good


@pytest.mark.parametrize(
    "bad",
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "/abs",
        "a\\b",
        "t\x00",
        "t\n1",
        "-rf",
        ".hidden",
        "x" * 129,
        "é",
        "a b",
        None,
        7,
    ],
)
def test_unsafe_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidScopeIdError, match="is not valid") as caught:
        validate_scope_id(bad, "thread id")
    assert isinstance(caught.value, InvalidPathError)
    assert "\n" not in str(caught.value) and "\x00" not in str(caught.value)


async def test_a_thread_id_with_dot_dot_never_reaches_a_path(store: Store) -> None:
    await _put(store, "/agents/bot/secret.md", "agent notes")
    scopes = Scopes.on(store, policy=Policy.allow_all())
    for bad in ("..", "../agents/bot", "t1/../../agents/bot"):
        with pytest.raises(InvalidScopeIdError):
            scopes.workspace(BOT, agent_id="bot", thread_id=bad)
        with pytest.raises(InvalidScopeIdError):
            await scopes.end_thread(bad, principal=BOT)
    with pytest.raises(InvalidScopeIdError):
        scopes.workspace(BOT, agent_id="../threads/t1")
    assert await store.exists(P("/agents/bot/secret.md"))


# -- layout and areas --------------------------------------------------------------------------


async def test_areas_are_folders_of_the_backing_store(store: Store) -> None:
    await _put(store, "/global/policy.md", "shared")
    scoped = _scoped(store, global_scope="read_write")
    ws = scoped.workspace
    assert [(a.kind, str(a.prefix)) for a in scoped.areas] == [
        (ScopeKind.THREAD, "/thread"),
        (ScopeKind.AGENT, "/agent"),
        (ScopeKind.GLOBAL, "/global"),
    ]
    assert [str(e.path) for e in await ws.list("/")] == ["/agent", "/global", "/thread"]
    await ws.write("/thread/scratch.md", "draft")
    await ws.write("/agent/memory/facts.md", "the user prefers tea")
    assert await ws.read_text("/global/policy.md") == "shared"
    assert (await store.read_all(P("/threads/t1/scratch.md"))) == b"draft"
    assert (await store.read_all(P("/agents/bot/memory/facts.md"))) == b"the user prefers tea"
    listed = [str(e.path) for e in await ws.list("/agent", recursive=True)]
    assert listed == ["/agent/memory", "/agent/memory/facts.md"]


async def test_an_unused_area_is_an_empty_folder_until_written(store: Store) -> None:
    ws = _scoped(store).workspace
    assert await ws.list("/thread") == []
    assert (await ws.stat("/thread")).is_dir
    assert not await store.exists(P("/threads/t1"))
    with pytest.raises(NotFoundError, match=re.escape("/thread/nothing.md not found")):
        await ws.read_text("/thread/nothing.md")


async def test_another_thread_and_another_agent_are_not_visible(store: Store) -> None:
    await _put(store, "/threads/t2/other.md", "another conversation")
    await _put(store, "/agents/eve/notes.md", "another agent")
    ws = _scoped(store).workspace
    found = [str(e.path) for e in await ws.list("/", recursive=True)]
    assert found == ["/agent", "/global", "/thread"]
    grep = await ws.grep("another", "/")
    assert grep.matches == ()
    with pytest.raises(InvalidPathError):
        await ws.read_text("/thread/../../threads/t2/other.md")


async def test_global_is_read_only_for_agents_by_default(store: Store) -> None:
    await _put(store, "/global/policy.md", "shared")
    ws = _scoped(store).workspace
    with pytest.raises(ScopeError, match="read-only"):
        await ws.write("/global/policy.md", "changed by an agent")
    with pytest.raises(ScopeError):
        await ws.delete("/global/policy.md")
    assert (await store.read_all(P("/global/policy.md"))) == b"shared"
    assert "read-only" in ws.filesystem_map()


async def test_each_area_carries_its_own_labels(store: Store) -> None:
    await _put(store, "/global/plan.md", "confidential plan")
    scopes = Scopes.on(
        store,
        policy=Policy.allow_all(),
        labels={"global": Labels(classification="confidential")},
    )
    cleared = Principal.of("lead", clearance="confidential")
    assert (
        await scopes.workspace(cleared, agent_id="bot").workspace.read_text("/global/plan.md")
        == "confidential plan"
    )
    ws = scopes.workspace(BOT, agent_id="bot").workspace
    assert [str(e.path) for e in await ws.list("/")] == ["/agent"]
    with pytest.raises(NoMountError):
        await ws.read_text("/global/plan.md")


async def test_an_area_can_be_left_out_and_other_mounts_added(store: Store) -> None:
    docs = MemoryStore()
    await _put(docs, "/handbook.md", "handbook")
    scopes = Scopes.on(
        store, policy=Policy.allow_all(), mounts=[Mount.of("/docs", docs, "read_only")]
    )
    scoped = scopes.workspace(BOT, agent_id="bot")
    assert [a.kind for a in scoped.areas] == [ScopeKind.AGENT, ScopeKind.GLOBAL]
    assert scoped.area("thread") is None
    assert await scoped.workspace.read_text("/docs/handbook.md") == "handbook"
    with pytest.raises(ConfigurationError, match="no thread area"):
        await scoped.end_thread()


async def test_one_store_per_kind_of_area(tmp_path: Path) -> None:
    shared, agents, threads = MemoryStore(), MemoryStore(), LocalStore(tmp_path, create=True)
    await _put(shared, "/guide.md", "shared guide")
    scopes = Scopes(
        global_area=Area(store=shared, scope=Scope.READ_ONLY),
        agent_area=Area(store=agents),
        thread_area=Area(store=threads, folder="/scratch", prefix="/tmp"),
        policy=Policy.allow_all(),
    )
    scoped = scopes.workspace(BOT, agent_id="bot", thread_id="t9")
    await scoped.workspace.write("/tmp/a.txt", "x")
    await scoped.workspace.write("/agent/b.txt", "y")
    assert (tmp_path / "scratch" / "t9" / "a.txt").read_text() == "x"
    assert await agents.read_all(P("/bot/b.txt")) == b"y"
    assert await scoped.resolve("guide.md") == P("/global/guide.md")


def test_bad_area_configuration_is_a_developer_error() -> None:
    with pytest.raises(ConfigurationError):
        Scopes(
            global_area=Area(store=MemoryStore(), folder="../up"),
            agent_area=None,
            thread_area=None,
            policy=Policy.allow_all(),
        )
    scopes = Scopes.on(
        MemoryStore(), policy=Policy.allow_all(), mounts=[Mount.of("/agent", MemoryStore())]
    )
    with pytest.raises(ConfigurationError, match="two mounts"):
        scopes.workspace(BOT, agent_id="bot")


# -- the overlay -------------------------------------------------------------------------------


async def test_resolve_looks_in_thread_then_agent_then_global(store: Store) -> None:
    await _put(store, "/global/style.md", "global style")
    await _put(store, "/global/only-global.md", "g")
    await _put(store, "/agents/bot/style.md", "agent style")
    scoped = _scoped(store)
    assert await scoped.resolve("style.md") == P("/agent/style.md")
    await scoped.workspace.write("/thread/style.md", "thread style")
    assert await scoped.resolve("style.md") == P("/thread/style.md")
    assert await scoped.resolve("only-global.md") == P("/global/only-global.md")
    assert scoped.candidates("a/b.md") == (
        P("/thread/a/b.md"),
        P("/agent/a/b.md"),
        P("/global/a/b.md"),
    )
    with pytest.raises(NotFoundError, match=re.escape("missing.md not found in any area")):
        await scoped.resolve("missing.md")


async def test_resolve_refuses_names_that_climb_out(store: Store) -> None:
    await _put(store, "/threads/t2/x.md", "other thread")
    scoped = _scoped(store)
    for bad in ("../x.md", "../../threads/t2/x.md", "a/../../x.md"):
        with pytest.raises(InvalidPathError, match="climbs above"):
            await scoped.resolve(bad)
    # An absolute name is still relative to each area: it cannot reach another thread.
    with pytest.raises(NotFoundError):
        await scoped.resolve("/threads/t2/x.md")


async def test_resolve_skips_what_the_principal_may_not_read(store: Store) -> None:
    await _put(store, "/global/notes.md", "global notes")
    await _put(store, "/agents/bot/notes.md", "private agent notes")
    policy = Policy(
        rules=(
            Rule.deny("*", "/agent/notes.md", roles={"guest"}),
            Rule.allow("*", "/**"),
        )
    )
    scopes = Scopes.on(store, policy=policy)
    owner = scopes.workspace(BOT, agent_id="bot")
    guest = owner.with_principal(Principal.of("guest", roles={"guest"}))
    assert await owner.resolve("notes.md") == P("/agent/notes.md")
    assert await guest.resolve("notes.md") == P("/global/notes.md")
    assert guest.agent_id == "bot" and guest.workspace.principal.id == "guest"


async def test_layered_merges_areas_by_name(store: Store) -> None:
    await _put(store, "/global/skills/a/SKILL.md", "g")
    await _put(store, "/global/skills/b/SKILL.md", "g")
    await _put(store, "/agents/bot/skills/b/SKILL.md", "a")
    await _put(store, "/threads/t1/skills/c/SKILL.md", "t")
    entries = await _scoped(store).layered("skills")
    assert [(e.name, str(e.path), e.scope.value) for e in entries] == [
        ("a", "/global/skills/a", "global"),
        ("b", "/agent/skills/b", "agent"),
        ("c", "/thread/skills/c", "thread"),
    ]
    assert entries[1].shadowed == (P("/global/skills/b"),)
    top = await _scoped(store).layered()
    assert [e.name for e in top] == ["skills"]


# -- ending a thread ---------------------------------------------------------------------------


async def test_end_thread_removes_the_scratch_area_and_nothing_else(store: Store) -> None:
    await _put(store, "/threads/t2/keep.md", "another thread")
    await _put(store, "/agents/bot/keep.md", "agent")
    scoped = _scoped(store)
    await scoped.workspace.write("/thread/a.md", "1")
    await scoped.workspace.write("/thread/deep/er/b.md", "2")
    done = await scoped.end_thread()
    assert (done.thread_id, done.removed, done.complete) == ("t1", 2, True)
    assert not await store.exists(P("/threads/t1"))
    assert await store.exists(P("/threads/t2/keep.md"))
    assert await store.exists(P("/agents/bot/keep.md"))
    assert await scoped.workspace.list("/thread") == []
    deletes = [r for r in scoped.workspace.audit.records if r.operation == "delete"]
    assert [r.path for r in deletes] == ["/thread/a.md", "/thread/deep"]
    assert all(r.allowed and r.principal == "bot" for r in deletes)


async def test_end_thread_by_id_goes_through_the_guard(store: Store) -> None:
    await _put(store, "/threads/t1/a.md", "scratch")
    policy = Policy(
        rules=(
            Rule.deny("delete", "/thread/**", roles={"agent"}),
            Rule.allow("*", "/**"),
        )
    )
    scopes = Scopes.on(store, policy=policy)
    with pytest.raises(PolicyDeniedError):
        await scopes.end_thread("t1", principal=BOT)
    assert await store.exists(P("/threads/t1/a.md"))
    done = await scopes.end_thread("t1", principal=Principal.of("operator"))
    assert done.complete and not await store.exists(P("/threads/t1"))
    refused = [r for r in scopes.audit.records if not r.allowed]
    assert refused and refused[0].principal == "bot"


async def test_end_thread_leaves_what_the_principal_may_not_see(store: Store) -> None:
    await _put(store, "/threads/t1/visible.md", "v")
    await _put(store, "/threads/t1/.secret/key", "k")
    policy = Policy(rules=(Rule.deny("*", "/thread/.secret/**"), Rule.allow("*", "/**")))
    scoped = Scopes.on(store, policy=policy).workspace(BOT, thread_id="t1")
    done = await scoped.end_thread()
    assert (done.removed, done.complete) == (1, False)
    assert await store.exists(P("/threads/t1/.secret/key"))
    assert not await store.exists(P("/threads/t1/visible.md"))


async def test_a_read_only_thread_area_cannot_be_ended(store: Store) -> None:
    await _put(store, "/threads/t1/a.md", "scratch")
    scoped = _scoped(store, thread_scope="read_only")
    with pytest.raises(ScopeError):
        await scoped.end_thread()
    assert await store.exists(P("/threads/t1/a.md"))


async def test_the_area_itself_is_a_mount_point(store: Store) -> None:
    ws = _scoped(store).workspace
    await ws.write("/thread/a.md", "1")
    with pytest.raises(PolicyDeniedError, match="mount point"):
        await ws.delete("/thread", recursive=True)
    assert await ws.exists("/thread/a.md")


# -- the folder view ---------------------------------------------------------------------------


async def test_folder_errors_name_the_view_paths_not_the_backing_ones(store: Store) -> None:
    view = FolderStore(store, P("/threads/t1"))
    with pytest.raises(NotFoundError) as caught:
        await view.read_all(P("/nope/x.md"))
    assert "/threads" not in str(caught.value)
    await view.write(P("/a.md"), b"1")
    with pytest.raises(AlreadyExistsError) as exists:
        await view.write(P("/a.md"), b"2", mode=WriteMode.CREATE)
    assert str(exists.value).startswith("/a.md")
    with pytest.raises(IsADirectoryError_):
        await view.delete(VPath.ROOT, recursive=True)
    assert await store.read_all(P("/threads/t1/a.md")) == b"1"


async def test_remove_folder_keeps_a_folder_that_is_not_empty(store: Store) -> None:
    view = FolderStore(store, P("/threads/t1"))
    assert await view.remove_folder_if_empty()
    await view.write(P("/a.md"), b"1")
    assert not await view.remove_folder_if_empty()
    await view.delete(P("/a.md"))
    assert await view.remove_folder_if_empty()
    assert not await store.exists(P("/threads/t1"))


class TestFolderStoreOverMemory(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return FolderStore(MemoryStore(), P("/threads/t1"))


class TestFolderStoreOverLocal(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        return FolderStore(LocalStore(tmp_path, create=True), P("/agents/a1"))
