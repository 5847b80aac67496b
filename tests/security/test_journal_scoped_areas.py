"""Scoped workspaces mount each agent's and each thread's own folder at the same prefix
(``/agent``, ``/thread``): ``/thread/notes.md`` is another file in every thread. The change
journal they share must keep them apart: a principal in another thread never sees a change
to someone else's area (its path, its diff), never undoes it, and never gets its content
written into its own area by an undo. Run against both journals: SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import MemoryStore, NotFoundError, Policy, Principal
from bastion.agents.scopes import Scopes
from bastion.agents.tools import CHANGE_TOOLS, Toolset
from bastion.workspace.journal import Journal, PgJournal

ALICE, MALLORY = Principal.of("alice"), Principal.of("mallory")


@pytest.fixture(params=["sqlite", "postgresql"])
def journal_at(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Journal]]:
    pg = request.param == "postgresql"
    where = str(request.getfixturevalue("pg_dsn")) if pg else str(tmp_path / "journal.db")
    opened: list[Journal] = []

    def open_() -> Journal:
        opened.append(PgJournal(where) if pg else Journal(where))
        return opened[-1]

    yield open_
    for journal in opened:
        journal.close()


@pytest.fixture
def scopes(journal_at: Callable[[], Journal]) -> Scopes:
    return Scopes.on(MemoryStore(), policy=Policy.allow_all(), journal=journal_at())


async def test_another_threads_area_is_not_in_the_change_list(scopes: Scopes) -> None:
    alice = scopes.workspace(ALICE, agent_id="a", thread_id="t-alice").workspace
    mallory = scopes.workspace(MALLORY, agent_id="m", thread_id="t-mal").workspace
    await alice.write("/thread/notes.md", "zebra plan\n")
    await alice.write("/agent/memory.md", "zebra memory\n")
    await alice.delete("/thread/notes.md")
    assert await mallory.changes() == []
    assert await mallory.changes(thread="t-alice") == []
    for change in await alice.changes():
        for call in (mallory.diff, mallory.undo):
            with pytest.raises(NotFoundError):
                await call(change.id)
    with pytest.raises(NotFoundError):
        await mallory.revert("t-alice")
    assert not await mallory.exists("/thread/notes.md")  # nothing written into her area
    # alice sees her own, under the paths she knows, and takes them back
    assert [e.path for c in await alice.changes() for e in c.entries] == [
        "/thread/notes.md",
        "/agent/memory.md",
        "/thread/notes.md",
    ]
    assert "zebra plan" in await alice.diff((await alice.changes())[-1].id)
    await alice.undo((await alice.changes())[-1].id)
    assert await alice.read_text("/thread/notes.md") == "zebra plan\n"


async def test_an_agents_undo_tool_takes_back_only_its_own_area(scopes: Scopes) -> None:
    """Two agents of one principal: the second (in no thread) asks to undo its own last
    change; the first's, in its own area, is not its own."""
    first = scopes.workspace(ALICE, agent_id="a", thread_id="t1").workspace
    second = scopes.workspace(ALICE, agent_id="b").workspace
    await first.write("/agent/draft.md", "zebra draft\n")
    await first.delete("/agent/draft.md")
    out = await Toolset(second, extra=CHANGE_TOOLS).call("undo_last_change", {})
    assert out["success"] is False
    assert not await second.exists("/agent/draft.md")  # nothing written into its area
    out = await Toolset(first, extra=CHANGE_TOOLS).call("undo_last_change", {})
    assert out["success"] is True and out["restored"] == ["/agent/draft.md"]


async def test_one_agent_across_threads_shares_its_own_area(scopes: Scopes) -> None:
    one = scopes.workspace(ALICE, agent_id="bot", thread_id="t1").workspace
    two = scopes.workspace(ALICE, agent_id="bot", thread_id="t2").workspace
    await two.write("/agent/notes.md", "kept across threads\n")
    await two.write("/thread/scratch.md", "t2's own\n")
    seen = [e.path for c in await one.changes() for e in c.entries]
    assert seen == ["/agent/notes.md"]  # the agent's area is the same folder; t2's is not
    await one.undo((await one.changes())[-1].id)
    assert not await two.exists("/agent/notes.md")
    assert await two.read_text("/thread/scratch.md") == "t2's own\n"
