"""The safety rules of agent tools: read before write, no stale writes, one writer per path,
approval that fails closed, and a guard that refuses at call time whatever tools exist."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bastion import (
    ConfigurationError,
    Labels,
    LocalStore,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    Workspace,
)
from bastion.agents.tools import Approval, ApprovalRequest, PathLocks, Toolset
from bastion.core.models import WriteMode
from bastion.core.paths import VPath


def _workspace(*mounts: Mount, policy: Policy | None = None, **kw: Any) -> Workspace:
    if not mounts:
        mounts = (Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore()))
    return Workspace(list(mounts), policy=policy or Policy.allow_all(), **kw)


async def _seed(ws: Workspace, path: str, text: str) -> None:
    """Put a file in place as another writer would (not through the agent's tools)."""
    await ws.write(path, text)


# -- read before write -----------------------------------------------------------------------


async def test_overwriting_an_unread_file_is_refused_and_changes_nothing() -> None:
    ws = _workspace()
    await _seed(ws, "/work/notes.md", "keep me\n")
    tools = Toolset(ws)
    out = await tools.call("write_file", {"path": "/work/notes.md", "content": "clobbered"})
    assert out["success"] is False
    assert "was not read" in out["error"] and "read it first" in out["error"]
    assert await ws.read_text("/work/notes.md") == "keep me\n"


async def test_a_partial_read_is_enough_to_write() -> None:
    ws = _workspace()
    await _seed(ws, "/work/notes.md", "a\nb\nc\n")
    tools = Toolset(ws)
    read = await tools.call("read_file", {"path": "/work/notes.md", "offset": 1, "limit": 1})
    assert read["success"] and read["content"].startswith("     2\tb\n[... more lines")
    assert read["next_offset"] == 2
    out = await tools.call("write_file", {"path": "/work/notes.md", "content": "new\n"})
    assert out == {"success": True, "path": "/work/notes.md", "size": 4, "created": False}


async def test_editing_an_unread_file_is_refused() -> None:
    ws = _workspace()
    await _seed(ws, "/work/a.txt", "alpha beta\n")
    tools = Toolset(ws)
    args = {"path": "/work/a.txt", "old_string": "beta", "new_string": "gamma"}
    refused = await tools.call("edit_file", args)
    assert refused["success"] is False and "read it first" in refused["error"]
    await tools.call("read_file", {"path": "/work/a.txt"})
    assert (await tools.call("edit_file", args))["success"] is True
    assert await ws.read_text("/work/a.txt") == "alpha gamma\n"


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_new_files_need_no_read_and_what_the_agent_wrote_counts_as_read(
    kind: str, tmp_path: Path
) -> None:
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path)
    ws = _workspace(Mount.of("/work", store))
    tools = Toolset(ws)
    first = await tools.call("write_file", {"path": "/work/new/x.md", "content": "1"})
    assert first["created"] is True
    second = await tools.call("write_file", {"path": "/work/new/x.md", "content": "2"})
    assert second["success"] is True and second["created"] is False
    edit = {"path": "/work/new/x.md", "old_string": "2", "new_string": "3"}
    assert (await tools.call("edit_file", edit))["success"] is True
    again = await tools.call("write_file", {"path": "/work/new/x.md", "content": "4"})
    assert again["success"] is True
    assert await ws.read_text("/work/new/x.md") == "4"


async def test_intent_update_follows_the_same_rule_and_create_never_replaces() -> None:
    ws = _workspace()
    await _seed(ws, "/work/a.md", "old")
    tools = Toolset(ws, style="intent")
    upd = {"path": "/work/a.md", "operation": "update", "content": "new"}
    assert "read it first" in (await tools.call("update", upd))["error"]
    create = {"path": "/work/a.md", "operation": "create", "content": "new"}
    created = await tools.call("update", create)
    assert created["success"] is False and "already exists" in created["error"]
    await tools.call("access", {"path": "/work/a.md"})
    assert (await tools.call("update", upd))["success"] is True
    assert await ws.read_text("/work/a.md") == "new"


async def test_overwriting_copy_or_move_needs_the_target_read() -> None:
    ws = _workspace()
    await _seed(ws, "/work/src.md", "source")
    await _seed(ws, "/work/dst.md", "precious")
    tools = Toolset(ws)
    args = {"src": "/work/src.md", "dst": "/work/dst.md", "overwrite": True}
    for name in ("copy", "move"):
        out = await tools.call(name, args)
        assert out["success"] is False and "read it first" in out["error"], name
    assert await ws.read_text("/work/dst.md") == "precious"
    await tools.call("read_file", {"path": "/work/dst.md"})
    assert (await tools.call("move", args))["success"] is True
    assert await ws.read_text("/work/dst.md") == "source"


async def test_a_write_only_drop_box_is_written_without_a_read() -> None:
    ws = _workspace(Mount.of("/outbox", MemoryStore(), "write_only"))
    tools = Toolset(ws)
    assert "read_file" not in tools
    for text in ("one", "two"):
        out = await tools.call("write_file", {"path": "/outbox/report.md", "content": text})
        assert out["success"] is True, out


# -- stale writes ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "local"])
async def test_a_write_after_another_writer_changed_the_file_is_refused(
    kind: str, tmp_path: Path
) -> None:
    store = MemoryStore() if kind == "memory" else LocalStore(tmp_path)
    ws = _workspace(Mount.of("/work", store))
    await _seed(ws, "/work/plan.md", "v1\n")
    tools = Toolset(ws)
    await tools.call("read_file", {"path": "/work/plan.md"})
    await _seed(ws, "/work/plan.md", "v2 by someone else\n")
    out = await tools.call("write_file", {"path": "/work/plan.md", "content": "agent's v1 edit"})
    assert out["success"] is False
    assert "changed since you read it" in out["error"]
    edit = {"path": "/work/plan.md", "old_string": "v", "new_string": "w"}
    assert "changed since you read it" in (await tools.call("edit_file", edit))["error"]
    assert await ws.read_text("/work/plan.md") == "v2 by someone else\n"
    await tools.call("read_file", {"path": "/work/plan.md"})
    assert (await tools.call("write_file", {"path": "/work/plan.md", "content": "v3"}))["success"]


async def test_two_agents_on_one_workspace_cannot_overwrite_each_other_blindly() -> None:
    ws = _workspace()
    await _seed(ws, "/work/shared.md", "base\n")
    alice = Toolset(ws.with_principal(Principal.of("alice")))
    bob = Toolset(ws.with_principal(Principal.of("bob")))
    await alice.call("read_file", {"path": "/work/shared.md"})
    await bob.call("read_file", {"path": "/work/shared.md"})
    assert (await bob.call("write_file", {"path": "/work/shared.md", "content": "bob"}))["success"]
    lost = await alice.call("write_file", {"path": "/work/shared.md", "content": "alice"})
    assert lost["success"] is False and "changed since you read it" in lost["error"]
    assert await ws.read_text("/work/shared.md") == "bob"


# -- one writer per path ---------------------------------------------------------------------


class YieldingStore(MemoryStore):
    """A memory store whose writes take a while (they yield to the event loop), counting how
    many writes to one path are in progress at once: a fake of our own port."""

    def __init__(self) -> None:
        super().__init__()
        self.active: dict[VPath, int] = {}
        self.most_per_path = 0
        self.most_overall = 0

    async def stat(self, path: VPath) -> Any:
        await asyncio.sleep(0)
        return await super().stat(path)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> Any:
        self.active[path] = self.active.get(path, 0) + 1
        self.most_per_path = max(self.most_per_path, self.active[path])
        self.most_overall = max(self.most_overall, sum(self.active.values()))
        try:
            await asyncio.sleep(0.005)
            return await super().write(path, data, mode=mode, if_version=if_version)
        finally:
            self.active[path] -= 1


async def test_concurrent_edits_of_one_file_run_one_at_a_time_and_none_is_lost() -> None:
    store = YieldingStore()
    ws = _workspace(Mount.of("/work", store))
    slots = "".join(f"slot{i}\n" for i in range(12))
    await ws.write("/work/board.md", slots)
    tools = Toolset(ws)
    await tools.call("read_file", {"path": "/work/board.md"})
    store.most_per_path = 0
    results = await asyncio.gather(
        *(
            tools.call(
                "edit_file",
                {"path": "/work/board.md", "old_string": f"slot{i}\n", "new_string": f"done{i}\n"},
            )
            for i in range(12)
        )
    )
    assert all(r["success"] for r in results), results
    assert store.most_per_path == 1
    assert await ws.read_text("/work/board.md") == "".join(f"done{i}\n" for i in range(12))
    assert len(tools.session.locks) == 0  # every lock was dropped once free


async def test_writes_to_different_paths_are_not_serialized() -> None:
    store = YieldingStore()
    ws = _workspace(Mount.of("/work", store))
    tools = Toolset(ws)
    results = await asyncio.gather(
        *(tools.call("write_file", {"path": f"/work/f{i}.md", "content": "x"}) for i in range(6))
    )
    assert all(r["success"] for r in results)
    assert store.most_per_path == 1
    assert store.most_overall > 1


async def test_sessions_sharing_locks_serialize_their_writes_too() -> None:
    store = YieldingStore()
    ws = _workspace(Mount.of("/work", store))
    locks = PathLocks()
    agents = [Toolset(ws, locks=locks) for _ in range(4)]
    results = await asyncio.gather(
        *(a.call("write_file", {"path": "/work/log.md", "content": "x"}) for a in agents)
    )
    # One creates the file; the others find it existing and unread, and are refused.
    assert sorted(r["success"] for r in results) == [False, False, False, True]
    assert store.most_per_path == 1


# -- approval --------------------------------------------------------------------------------


async def test_approval_is_asked_with_the_call_and_allows_on_true() -> None:
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    ws = _workspace(principal=Principal.of("agent-9"))
    tools = Toolset(ws, approval=Approval(approve, tools={"write_file"}))
    out = await tools.call("write_file", {"path": "/work/a.md", "content": "x"})
    assert out["success"] is True
    (request,) = asked
    assert request.tool == "write_file"
    assert request.paths == ("/work/a.md",)
    assert request.principal == "agent-9"
    assert request.arguments["content"] == "x"


@pytest.mark.parametrize(
    "answer",
    [None, False, "yes", 1, RuntimeError("approver crashed")],
    ids=["none", "false", "truthy-string", "one", "raises"],
)
async def test_approval_fails_closed(answer: Any) -> None:
    def approve(request: ApprovalRequest) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    ws = _workspace()
    tools = Toolset(ws, approval=Approval(approve, tools={"write_file"}))
    out = await tools.call("write_file", {"path": "/work/a.md", "content": "x"})
    assert out["success"] is False
    assert "not approved" in out["error"]
    assert "crashed" not in out["error"]
    assert not await ws.exists("/work/a.md")


def test_approval_rules_without_an_approver_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Toolset(_workspace(), approval=Approval(None, paths=("/work/**",)))


async def test_path_approval_covers_changes_under_the_paths_only() -> None:
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(f"{request.tool} {' '.join(request.paths)}")
        return False

    ws = _workspace()
    await _seed(ws, "/work/protected/x.md", "x")
    tools = Toolset(ws, approval=Approval(approve, paths=("/work/protected/**",)))
    assert (await tools.call("read_file", {"path": "/work/protected/x.md"}))["success"]
    assert (await tools.call("write_file", {"path": "/work/free.md", "content": "y"}))["success"]
    moved = await tools.call("move", {"src": "/work/free.md", "dst": "/work/protected/y.md"})
    assert moved["success"] is False
    deleted = await tools.call("delete", {"path": "/work/protected/x.md"})
    assert deleted["success"] is False
    assert asked == ["move /work/free.md /work/protected/y.md", "delete /work/protected/x.md"]
    assert await ws.exists("/work/protected/x.md")


# -- the guard decides at call time ----------------------------------------------------------


async def test_a_tool_that_exists_is_still_refused_for_a_path_the_principal_cannot_see() -> None:
    policy = Policy(
        rules=(
            Rule.deny("*", "/docs/secret/**"),
            Rule.allow("*", "/**"),
        )
    )
    ws = _workspace(policy=policy)
    docs = ws.mounts[0].store
    await docs.makedirs(VPath.parse("/secret"))
    await docs.write(VPath.parse("/secret/plan.md"), b"the plan")
    tools = Toolset(ws)
    assert "read_file" in tools and "write_file" in tools
    hidden = await tools.call("read_file", {"path": "/docs/secret/plan.md"})
    missing = await tools.call("read_file", {"path": "/docs/secret/nothing.md"})
    assert hidden == {"success": False, "error": "/docs/secret/plan.md not found"}
    assert missing == {"success": False, "error": "/docs/secret/nothing.md not found"}
    listing = await tools.call("list_files", {"path": "/docs"})
    assert "secret" not in listing["tree"]
    grep = await tools.call("grep", {"pattern": "plan"})
    assert grep["total_found"] == 0
    read_only = await tools.call("write_file", {"path": "/docs/new.md", "content": "x"})
    assert read_only["success"] is False and "read-only" in read_only["error"]


async def test_a_mount_hidden_by_labels_is_not_there_for_the_tools() -> None:
    hr = MemoryStore()
    await hr.write(VPath.parse("/pay.md"), b"salaries")
    ws = _workspace(
        Mount.of("/hr", hr, "read_only", labels=Labels(classification="confidential")),
        Mount.of("/work", MemoryStore()),
        principal=Principal.of("intern", clearance="public"),
    )
    tools = Toolset(ws)
    out = await tools.call("read_file", {"path": "/hr/pay.md"})
    assert out["success"] is False
    assert "not under any mount" in out["error"] and "/hr" not in out["error"].split(";")[1]
    assert "hr" not in (await tools.call("list_files", {}))["tree"]


async def test_a_hidden_tool_run_anyway_is_refused_by_the_guard() -> None:
    """Hiding is not enforcement: running write_file's function directly on a read-only
    workspace still fails, because the workspace's guard decides."""
    from bastion import ScopeError
    from bastion.agents.tools.granular import write_file

    ws = _workspace(Mount.of("/docs", MemoryStore(), "read_only"))
    tools = Toolset(ws)
    assert "write_file" not in tools
    with pytest.raises(ScopeError):
        await write_file.fn(tools.session, path="/docs/a.md", content="x")
    assert not await ws.exists("/docs/a.md")
