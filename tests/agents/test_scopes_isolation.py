"""Scoped workspaces stay apart: no agent or thread id names another scope, and a hidden entry
resolves as an absent one (red-team variants, area E).

Classes pinned (docs/security.md, "scopes"): an agent or thread id never names another
scope's folder (case, Unicode look-alikes, ``..``, separators, control characters, very long
ids are refused or stay their own folder); a thread's files are not seen by another thread;
resolving a name most specific first answers a hidden entry exactly as an absent one, also
when a file of the more specific area stands where the name needs a folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Rule, Store, VPath, Workspace
from bastion.agents.scopes import InvalidScopeIdError, Scopes, validate_scope_id

ME = Principal.of("me")


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / "backing", create=True)


async def _put(store: Store, path: str, text: str) -> None:
    """Fill the backing store as a program would (not through any scope)."""
    await Workspace([Mount.of("/", store)], policy=Policy.allow_all()).write(path, text)


@pytest.mark.parametrize(
    "bad",
    [
        "..",
        ".",
        "../t2",
        "t1/../t2",
        "t1/t2",
        "t1\\t2",
        "/t2",
        "t2/",
        "t1\x00",
        "t1\n",
        "\u0130",  # a capital I with a dot: folds to two letters
        "\u212a",  # the Kelvin sign, which case-folds to k
        "t\uff12",  # a full-width digit
        "t" * 129,
        "",
        " t2",
        "-t2",
        "_t2",
    ],
)
def test_ids_that_could_reach_another_folder_are_refused(bad: str) -> None:
    with pytest.raises(InvalidScopeIdError):
        validate_scope_id(bad, "thread id")
    scopes = Scopes.on(MemoryStore(), policy=Policy.allow_all())
    with pytest.raises(InvalidScopeIdError):
        scopes.workspace(ME, agent_id="a", thread_id=bad)
    with pytest.raises(InvalidScopeIdError):
        scopes.workspace(ME, agent_id=bad)


async def test_a_thread_never_sees_another_threads_files(store: Store) -> None:
    scopes = Scopes.on(store, policy=Policy.allow_all())
    one = scopes.workspace(ME, agent_id="a", thread_id="t1")
    await one.workspace.write("/thread/secret.md", "zebra\n")
    for other_id in ("T1", "t1.", "t1-", "t1_", "t" + "1" * 127):
        other = scopes.workspace(ME, agent_id="a", thread_id=other_id)
        assert await other.workspace.list("/thread") == []
        assert [e.path.name for e in await other.layered()] == []
        with pytest.raises(Exception) as caught:
            await other.resolve("secret.md")
        assert "not found" in str(caught.value) and "zebra" not in str(caught.value)
    assert await one.workspace.read_text("/thread/secret.md") == "zebra\n"


async def test_resolving_past_a_hidden_entry_answers_as_past_an_absent_one(store: Store) -> None:
    policy = Policy(rules=(Rule.deny("*", "/thread/hidden/**"), Rule.allow("*", "/**")))
    scopes = Scopes.on(store, policy=policy)
    await _put(store, "/threads/t1/hidden/x.md", "zebra\n")
    await _put(store, "/agents/a/hidden/x.md", "agent copy\n")
    await _put(store, "/agents/a/absent/x.md", "agent copy\n")
    scoped = scopes.workspace(ME, agent_id="a", thread_id="t1")
    assert await scoped.resolve("hidden/x.md") == VPath.parse("/agent/hidden/x.md")
    assert await scoped.resolve("absent/x.md") == VPath.parse("/agent/absent/x.md")


async def test_a_file_standing_where_a_folder_is_needed_does_not_stop_resolution(
    store: Store,
) -> None:
    """``notes`` is a file in the thread and a folder in the agent's area: ``notes/x.md`` is
    the agent's, as it is when the thread has no ``notes`` at all."""
    scopes = Scopes.on(store, policy=Policy.allow_all())
    await _put(store, "/threads/t1/notes", "a file\n")
    await _put(store, "/agents/a/notes/x.md", "agent notes\n")
    scoped = scopes.workspace(ME, agent_id="a", thread_id="t1")
    assert await scoped.resolve("notes/x.md") == VPath.parse("/agent/notes/x.md")


async def test_a_hidden_file_standing_where_a_folder_is_needed_is_passed_over(
    store: Store,
) -> None:
    policy = Policy(rules=(Rule.deny("*", "/thread/notes"), Rule.allow("*", "/**")))
    scopes = Scopes.on(store, policy=policy)
    await _put(store, "/threads/t1/notes", "zebra\n")
    await _put(store, "/agents/a/notes/x.md", "agent notes\n")
    scoped = scopes.workspace(ME, agent_id="a", thread_id="t1")
    assert await scoped.resolve("notes/x.md") == VPath.parse("/agent/notes/x.md")
    assert [e.scope.value for e in await scoped.layered()] == ["agent"]
