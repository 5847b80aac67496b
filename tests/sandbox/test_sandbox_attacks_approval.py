"""Red team of approval on effects, with real bubblewrap: every way a command can change a
protected path is asked about before it is written back, and a refusal keeps it out whole.

Attacks pinned (docs/sandbox.md, "Approval on effects"): a refused new folder made anyway by
the write of a file below it (``mkdir -p keep/sub; echo > keep/sub/f``: the workspace's write
makes the parents; this used to come back); a protected file changed through a hard link or a
symbolic link made inside; a protected file renamed away; a mode change only; a protected
folder emptied by ``rm -rf``; a background process's ``write_back`` while it runs; every
command and every input asked about when ``execute`` itself is named.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from sandbox_support import require_bwrap

from bastion import MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.tools import Approval, ApprovalRequest, Toolset
from bastion.sandbox.approval import Effect

pytestmark = pytest.mark.usefixtures("bwrap")

RUNNER = Principal.of("runner")
RULES = (Rule.allow("execute", "/**", principals={"runner"}), Rule.allow("*", "/**"))


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


async def _workspace() -> Workspace:
    ws = Workspace(
        [Mount.of("/scratch", MemoryStore())],
        policy=Policy(rules=RULES),
        principal=Principal.of("owner"),
        audit=MemoryAuditSink(),
    )
    await ws.write("/scratch/a.txt", "alpha\n")
    await ws.write("/scratch/d/k.txt", "kept\n")
    return ws.with_principal(RUNNER)


class Reviewer:
    """Refuses the changes to ``protected`` paths, lets the rest through, notes every one."""

    def __init__(self, *protected: str) -> None:
        self.protected = protected
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, effect: Effect) -> str | None:
        self.asked.append((effect.kind, effect.path))
        return "kept out" if effect.path in self.protected else None


async def _names(ws: Workspace) -> list[str]:
    return sorted(str(e.path) for e in await ws.list("/scratch", recursive=True))


async def test_a_refused_new_folder_is_not_made_by_the_files_below_it() -> None:
    ws = await _workspace()
    review = Reviewer("/scratch/keep")
    result = await ws.run(
        "mkdir -p keep/sub/deeper && echo x > keep/sub/f && echo y > keep/g && echo z > free",
        cwd="/scratch",
        review=review,
    )
    assert result.exit_code == 0 and result.changed == ("/scratch/free",)
    assert result.refused["/scratch/keep"] == "kept out"
    for below in ("/scratch/keep/sub", "/scratch/keep/sub/deeper", "/scratch/keep/sub/f"):
        assert "/scratch/keep it needs was not approved" in result.refused[below]
    assert "/scratch/keep/g" in result.refused
    assert await _names(ws) == ["/scratch/a.txt", "/scratch/d", "/scratch/d/k.txt", "/scratch/free"]
    # only the folder itself was asked about; what lies below it was refused unasked
    assert ("mkdir", "/scratch/keep") in review.asked
    assert not [p for _, p in review.asked if p.startswith("/scratch/keep/")]


async def test_the_tools_refused_mkdir_keeps_the_folder_out_too() -> None:
    def asker(request: ApprovalRequest) -> bool:
        return request.change is None or request.paths != ("/scratch/keep",)

    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/keep"]))
    out = await toolset.call(
        "execute", {"command": "mkdir -p keep/a && echo x > keep/a/f", "cwd": "/scratch"}
    )
    assert not out.get("changed") and sorted(out["refused"]) == [
        "/scratch/keep",
        "/scratch/keep/a",
        "/scratch/keep/a/f",
    ]
    assert not await toolset.workspace.exists("/scratch/keep")


@pytest.mark.parametrize(
    "command",
    [
        "ln a.txt alias && echo evil >> alias",  # a hard link made inside: the same inode
        "ln -s a.txt link && echo evil >> link",  # through a symbolic link made inside
        "ln -s /scratch/a.txt /scratch/d/l && echo evil > /scratch/d/l",
        "cp a.txt t && echo evil >> t && mv t a.txt",  # replaced by a rename
        "python3 -c \"import os; fd = os.open('a.txt', os.O_WRONLY); os.pwrite(fd, b'E', 0)\"",
    ],
)
async def test_a_protected_file_changed_under_another_name_is_asked_about(command: str) -> None:
    ws = await _workspace()
    review = Reviewer("/scratch/a.txt")
    result = await ws.run(command, cwd="/scratch", review=review)
    assert result.exit_code == 0, result.stderr
    assert ("write", "/scratch/a.txt") in review.asked
    assert result.refused["/scratch/a.txt"] == "kept out"
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"


async def test_a_rename_away_is_a_delete_asked_about_and_a_mode_change_is_no_change() -> None:
    ws = await _workspace()
    review = Reviewer("/scratch/a.txt")
    moved = await ws.run("mv a.txt b.txt", cwd="/scratch", review=review)
    assert moved.refused == {"/scratch/a.txt": "kept out"} and moved.changed == ("/scratch/b.txt",)
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"
    review.asked.clear()
    modes = await ws.run(
        "chmod 000 a.txt; chmod u+s d/k.txt; touch -d 2001-01-01 a.txt",
        cwd="/scratch",
        review=review,
    )
    assert (modes.exit_code, modes.changed, modes.deleted, modes.refused) == (0, (), (), {})
    assert review.asked == []


async def test_a_protected_folder_emptied_by_rm_rf_keeps_what_was_refused() -> None:
    ws = await _workspace()
    review = Reviewer("/scratch/d/k.txt")
    result = await ws.run("rm -rf d", cwd="/scratch", review=review)
    assert result.refused["/scratch/d/k.txt"] == "kept out"
    assert "/scratch/d" in result.refused  # not empty: the refused file is still in it
    assert await ws.read_text("/scratch/d/k.txt") == "kept\n"


async def _until_ended(toolset: Toolset, pid: str) -> dict[str, Any]:
    for _ in range(600):
        listed = await toolset.call("process", {"action": "list"})
        (mine,) = [p for p in listed["processes"] if p["process_id"] == pid]
        if mine["state"] != "running":
            return cast(dict[str, Any], mine)
        await asyncio.sleep(0.05)
    raise AssertionError("the process did not end")


async def test_a_background_write_back_while_it_runs_is_asked_about() -> None:
    asked: list[ApprovalRequest] = []

    def asker(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.change is None

    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/**"]))
    started = await toolset.call(
        "execute",
        {
            "command": "rm a.txt; echo w > new; read _ || true",
            "cwd": "/scratch",
            "background": True,
        },
    )
    pid = started["process_id"]
    for _ in range(600):  # until its changes are in the view
        out = await toolset.call("process", {"action": "write_back", "process_id": pid})
        if out.get("refused") and len(out["refused"]) == 2:
            break
        await asyncio.sleep(0.05)
    assert set(out["refused"]) == {"/scratch/a.txt", "/scratch/new"}
    assert out.get("changed") is None and out.get("deleted") is None
    await toolset.call("process", {"action": "send", "process_id": pid, "close_input": True})
    ended = await _until_ended(toolset, pid)
    assert ended["exit_code"] == 0 and ended.get("changed") is None
    ws = toolset.workspace
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"
    assert not await ws.exists("/scratch/new")
    kinds = {(r.change, r.paths) for r in asked if r.change is not None}
    assert kinds == {("delete", ("/scratch/a.txt",)), ("write", ("/scratch/new",))}


async def test_naming_execute_asks_before_every_command_and_every_input() -> None:
    asked: list[ApprovalRequest] = []

    def refuse(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.arguments.get("command") == "sh"

    ws = await _workspace()
    toolset = Toolset(ws, approval=Approval(refuse, tools={"execute"}))
    for command in ("true", ["true"], "echo hi > x", ["sh", "-c", "rm a.txt"]):
        out = await toolset.call("execute", {"command": command, "cwd": "/scratch"})
        assert out["success"] is False and "not approved" in out["error"]
    started = await toolset.call(
        "execute", {"command": "sh", "cwd": "/scratch", "background": True}
    )
    pid = started["process_id"]
    sent = await toolset.call(
        "process", {"action": "send", "process_id": pid, "input": "rm a.txt\n"}
    )
    assert sent["success"] is False and "not approved" in sent["error"]
    back = await toolset.call("process", {"action": "write_back", "process_id": pid})
    assert back["success"] is False
    await toolset.call("process", {"action": "kill", "process_id": pid})
    assert [r.arguments.get("command") for r in asked] == [
        "true",
        ["true"],
        "echo hi > x",
        ["sh", "-c", "rm a.txt"],
        "sh",
        "rm a.txt\n",
        "",
    ]
    assert await ws.read_text("/scratch/a.txt") == "alpha\n"
    assert not await ws.exists("/scratch/x")
