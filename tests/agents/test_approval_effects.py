"""Approval judges a command's effects, not its spelling: with a path rule on ``/scratch/**``,
every way of writing ``rm /scratch/a.txt`` (brace expansion, a line continuation, an alias,
``sh -c``, ``$(printf rm)``, input to a shell, a background start, ``process send``) is asked
about, per path, before the deletion is written back, and a refusal keeps the file. Command
rules are a convenience: the spellings found are asked about too. Input sent to a background
process is audited with its size.

Real bubblewrap and real shells (skipped only where bubblewrap cannot start, saying why).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from bastion import MemoryAuditSink, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.tools import Approval, ApprovalRequest, Toolset
from bastion.sandbox import SandboxError
from bastion.sandbox.bwrap import bwrap_binary

RUNNER = Principal.of("runner")
RULES = (Rule.allow("execute", "/**", principals={"runner"}), Rule.allow("*", "/**"))

BYPASSES: list[str | list[str]] = [
    ["bash", "-c", "r{m,x} -f /scratch/a.txt"],  # brace expansion: rm rx -f ...
    "r\\\nm /scratch/a.txt",  # a line continuation joins r and m
    "alias zap=rm\nzap /scratch/a.txt",  # an alias, used on the next line
    ["sh", "-c", "rm /scratch/a.txt"],
    "$(printf rm) /scratch/a.txt",
    "`printf r``printf m` /scratch/a.txt",
    "p=/scratch/a; rm $p.txt",
]


@pytest.fixture
def bwrap() -> None:
    try:
        bwrap_binary()
    except SandboxError as exc:
        pytest.skip(f"bubblewrap cannot run on this machine: {exc}")


async def _workspace(audit: MemoryAuditSink | None = None) -> Workspace:
    ws = Workspace(
        [Mount.of("/scratch", MemoryStore()), Mount.of("/free", MemoryStore())],
        policy=Policy(rules=RULES),
        principal=Principal.of("owner"),
        audit=audit or MemoryAuditSink(),
    )
    await ws.write("/scratch/a.txt", "alpha\n")
    return ws.with_principal(RUNNER)


class Asker:
    """An approver that approves every call and refuses every change (or approves all)."""

    def __init__(self, *, changes: bool = False) -> None:
        self.changes = changes
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return True if request.change is None else self.changes

    @property
    def effects(self) -> list[tuple[str | None, tuple[str, ...]]]:
        return [(r.change, r.paths) for r in self.asked if r.change is not None]


async def _until_ended(toolset: Toolset, pid: str) -> dict[str, Any]:
    for _ in range(600):
        listed = await toolset.call("process", {"action": "list"})
        (mine,) = [p for p in listed["processes"] if p["process_id"] == pid]
        if mine["state"] != "running":
            return cast(dict[str, Any], mine)
        await asyncio.sleep(0.05)
    raise AssertionError("the process did not end")


# -- path rules: the effect is asked about, whatever the spelling ----------------------------


@pytest.mark.usefixtures("bwrap")
@pytest.mark.parametrize("command", BYPASSES)
async def test_every_spelling_of_a_deletion_is_asked_about_before_write_back(
    command: str | list[str],
) -> None:
    asker = Asker()
    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/**"]))
    out = await toolset.call("execute", {"command": command, "cwd": "/scratch"})
    assert out["success"] is True, out
    assert asker.effects == [("delete", ("/scratch/a.txt",))]
    assert "not approved" in out["refused"]["/scratch/a.txt"]
    assert out.get("deleted") is None
    assert await toolset.workspace.read_text("/scratch/a.txt") == "alpha\n"
    # the call itself was asked about first: it runs in a folder the rule reaches
    first = asker.asked[0]
    assert first.change is None and first.trees == ("/scratch",)


@pytest.mark.usefixtures("bwrap")
async def test_input_to_a_shell_is_judged_by_its_effect() -> None:
    asker = Asker()
    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/**"]))
    out = await toolset.call(
        "execute", {"command": "sh", "stdin": "r\\\nm /scratch/a.txt\n", "cwd": "/free"}
    )
    assert asker.effects == [("delete", ("/scratch/a.txt",))]
    assert "/scratch/a.txt" in out["refused"]
    assert await toolset.workspace.exists("/scratch/a.txt")


@pytest.mark.usefixtures("bwrap")
async def test_an_approved_change_is_written_back_and_unprotected_ones_ask_nobody() -> None:
    asker = Asker(changes=True)
    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/**"]))
    out = await toolset.call(
        "execute",
        {
            "command": "rm /scratch/a.txt; mkdir /scratch/d; echo x > /scratch/d/n; echo y > f",
            "cwd": "/free",
        },
    )
    assert out["deleted"] == ["/scratch/a.txt"] and out.get("refused") is None
    assert sorted(out["changed"]) == ["/free/f", "/scratch/d/n"]
    assert sorted(asker.effects) == [
        ("delete", ("/scratch/a.txt",)),
        ("mkdir", ("/scratch/d",)),
        ("write", ("/scratch/d/n",)),
    ]
    # run in /free, which no rule reaches: nobody was asked before it ran
    assert [r for r in asker.asked if r.change is None] == []
    assert asker.asked[0].arguments == {
        "command": "rm /scratch/a.txt; mkdir /scratch/d; echo x > /scratch/d/n; echo y > f",
        "cwd": "/free",
    }
    assert not await toolset.workspace.exists("/scratch/a.txt")


@pytest.mark.usefixtures("bwrap")
async def test_a_failing_or_missing_answer_keeps_the_change_out() -> None:
    def broken(request: ApprovalRequest) -> bool:
        if request.change is not None:
            raise RuntimeError("approver down")
        return True

    toolset = Toolset(await _workspace(), approval=Approval(broken, paths=["/scratch/**"]))
    out = await toolset.call("execute", {"command": "echo b > /scratch/a.txt", "cwd": "/free"})
    assert "not approved" in out["refused"]["/scratch/a.txt"]
    assert "approver down" not in str(out)
    assert await toolset.workspace.read_text("/scratch/a.txt") == "alpha\n"


@pytest.mark.usefixtures("bwrap")
async def test_a_background_start_is_asked_about_at_its_write_back() -> None:
    asker = Asker()
    toolset = Toolset(await _workspace(), approval=Approval(asker, paths=["/scratch/**"]))
    started = await toolset.call(
        "execute", {"command": "r\\\nm /scratch/a.txt", "cwd": "/free", "background": True}
    )
    ended = await _until_ended(toolset, started["process_id"])
    assert ended["exit_code"] == 0
    assert asker.effects == [("delete", ("/scratch/a.txt",))]
    assert "not approved" in ended["refused"]["/scratch/a.txt"]
    assert await toolset.workspace.exists("/scratch/a.txt")


@pytest.mark.usefixtures("bwrap")
async def test_process_send_is_asked_about_at_write_back_and_audited() -> None:
    asker = Asker()
    audit = MemoryAuditSink()
    ws = await _workspace(audit)
    toolset = Toolset(ws, approval=Approval(asker, paths=["/scratch/**"]))
    started = await toolset.call("execute", {"command": "sh", "cwd": "/free", "background": True})
    pid = started["process_id"]
    line = "$(printf rm) /scratch/a.txt\n"
    sent = await toolset.call(
        "process", {"action": "send", "process_id": pid, "input": line, "close_input": True}
    )
    assert sent["sent"] == len(line)
    ended = await _until_ended(toolset, pid)
    assert asker.effects == [("delete", ("/scratch/a.txt",))]
    assert "/scratch/a.txt" in ended["refused"]
    assert await ws.exists("/scratch/a.txt")
    (record,) = [r for r in audit.records if r.operation == "send"]
    assert record.allowed and record.path == "/free" and record.bytes == len(line)
    assert record.target == f"process {pid}" and "input closed" in record.reason
    assert "printf" not in record.reason  # the size is kept, never the input


@pytest.mark.usefixtures("bwrap")
async def test_a_refused_send_is_audited_too() -> None:
    audit = MemoryAuditSink()
    toolset = Toolset(await _workspace(audit))
    out = await toolset.call("process", {"action": "send", "process_id": "nope", "input": "x"})
    assert out["success"] is False
    (record,) = [r for r in audit.records if r.operation == "send"]
    assert not record.allowed and record.bytes == 1 and record.target == "process nope"


@pytest.mark.usefixtures("bwrap")
async def test_the_input_given_at_the_start_is_audited_by_size() -> None:
    audit = MemoryAuditSink()
    ws = await _workspace(audit)
    await ws.run("cat > /dev/null", stdin="secret words", cwd="/free")
    (record,) = [r for r in audit.records if r.operation == "run"]
    assert record.bytes == 12 and "input: 12 bytes" in record.reason
    assert "secret" not in record.reason


# -- command rules: a convenience, still asked for the spellings found ------------------------


@pytest.mark.usefixtures("bwrap")
@pytest.mark.parametrize("command", BYPASSES)
async def test_command_rules_ask_for_each_known_spelling(command: str | list[str]) -> None:
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    toolset = Toolset(await _workspace(), approval=Approval(deny, commands=["rm"]))
    out = await toolset.call("execute", {"command": command, "cwd": "/scratch"})
    assert out["success"] is False and "not approved" in out["error"]
    assert await toolset.workspace.exists("/scratch/a.txt")
    background = await toolset.call(
        "execute", {"command": command, "cwd": "/scratch", "background": True}
    )
    assert background["success"] is False and len(asked) == 2
    stdin = await toolset.call(
        "execute", {"command": "sh", "stdin": "rm /scratch/a.txt", "cwd": "/scratch"}
    )
    assert stdin["success"] is False and await toolset.workspace.exists("/scratch/a.txt")
