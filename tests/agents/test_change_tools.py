"""An agent may undo its own last change through the opt-in journal tool; it takes back
nothing of anyone else's, and a conflict is refused with nothing changed."""

from __future__ import annotations

from pathlib import Path

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools import CHANGE_TOOLS, Toolset
from bastion.workspace.journal import Journal


def _workspace(tmp_path: Path) -> Workspace:
    return Workspace(
        [Mount.of("/scratch", MemoryStore())],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
        journal=Journal(tmp_path / "journal.db"),
    )


async def test_an_agent_undoes_its_own_last_change(tmp_path: Path) -> None:
    ws = _workspace(tmp_path).with_thread("t1")
    tools = Toolset(ws, extra=CHANGE_TOOLS)
    assert "undo_last_change" in {t.name for t in tools.tools}
    assert (await tools.call("write_file", {"path": "/scratch/a.md", "content": "one\n"}))[
        "success"
    ]
    person = ws.with_principal(Principal.of("person"))
    await person.write("/scratch/b.md", "the person's\n")
    out = await tools.call("undo_last_change", {})
    assert out["success"] is True and out["removed"] == ["/scratch/a.md"]
    assert not await ws.exists("/scratch/a.md")
    assert await ws.read_text("/scratch/b.md") == "the person's\n"


async def test_an_undo_over_a_later_change_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    tools = Toolset(ws, extra=CHANGE_TOOLS)
    await tools.call("write_file", {"path": "/scratch/a.md", "content": "one\n"})
    await ws.with_principal(Principal.of("person")).write("/scratch/a.md", "edited\n")
    out = await tools.call("undo_last_change", {})
    assert out["success"] is False and "changed after change" in out["error"]
    assert await ws.read_text("/scratch/a.md") == "edited\n"


async def test_scoped_workspaces_record_their_thread(tmp_path: Path) -> None:
    from bastion.agents.scopes import Scopes

    scopes = Scopes.on(
        MemoryStore(), policy=Policy.allow_all(), journal=Journal(tmp_path / "journal.db")
    )
    bot = Principal.of("bot")
    one = scopes.workspace(bot, agent_id="bot", thread_id="t1").workspace
    two = scopes.workspace(bot, agent_id="bot", thread_id="t2").workspace
    await one.write("/thread/a.md", "one\n")
    await two.write("/agent/b.md", "two\n")
    assert [c.thread for c in await one.changes()] == ["t1", "t2"]
    await one.revert("t1")
    assert not await one.exists("/thread/a.md")
    assert await two.read_text("/agent/b.md") == "two\n"
