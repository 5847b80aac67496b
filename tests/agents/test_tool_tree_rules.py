"""The agent-tool rules hold for trees, not only for the paths a call names.

* **Approval.** A path rule (``/docs/team/protected/**``) is asked about a recursive delete, a
  move or a copy whose source or destination tree could hold a match (``delete /docs/team``,
  ``move /docs/team /elsewhere``, ``copy /docs /x``, ``copy /staging /docs/team``), decided
  from the pattern without listing the tree.
* **Read before write.** Deleting a file needs it read; deleting a tree needs every file in it
  read; copying a tree over a directory needs every file it replaces read. A refusal names the
  files to read, changes nothing, and never names a file the principal may not see.

Real workspaces over memory stores; the approver is a recording function.
"""

from __future__ import annotations

from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.tools import Approval, ApprovalRequest, Toolset

PROTECTED = "/docs/team/protected/**"

TREE = {
    "/docs/team/plan.md": "plan\n",
    "/docs/team/protected/salaries.md": "salaries\n",
    "/docs/team/protected/deep/review.md": "review\n",
    "/docs/other/notes.md": "notes\n",
    "/docs/readme.md": "readme\n",
    "/staging/tree/a.md": "staged a\n",
    "/staging/tree/protected/b.md": "staged b\n",
}


async def _workspace(policy: Policy | None = None) -> Workspace:
    owner = Workspace(
        [
            Mount.of("/docs", MemoryStore()),
            Mount.of("/staging", MemoryStore()),
            Mount.of("/elsewhere", MemoryStore()),
            Mount.of("/x", MemoryStore()),
            Mount.of("/ro", MemoryStore(), "read_only"),
        ],
        policy=policy or Policy.allow_all(),
    )
    for path, text in TREE.items():
        await owner.write(path, text)
    return owner.with_principal(Principal.of("agent"))


class Recorder:
    """An approver that records each request and answers ``answer``."""

    def __init__(self, answer: bool = False) -> None:
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return self.answer


async def _snapshot(ws: Workspace) -> dict[str, str]:
    out: dict[str, str] = {}
    for mount in ("/docs", "/staging", "/elsewhere", "/x"):
        for entry in await ws.list(mount, recursive=True):
            if entry.is_file:
                out[str(entry.path)] = await ws.read_text(entry.path)
    return out


async def _read_all(tools: Toolset, ws: Workspace, root: str) -> None:
    for entry in await ws.list(root, recursive=True):
        if entry.is_file:
            assert (await tools.call("read_file", {"path": str(entry.path)}))["success"]


# -- approval --------------------------------------------------------------------------------

ASKED = [
    # (tool, arguments, the trees the request names)
    ("delete", {"path": "/docs/team", "recursive": True}, ("/docs/team",)),
    ("delete", {"path": "/docs", "recursive": False}, ("/docs",)),  # a mount point: asked too
    ("move", {"src": "/docs/team", "dst": "/elsewhere/team"}, ("/docs/team", "/elsewhere/team")),
    ("copy", {"src": "/docs/team", "dst": "/x/team"}, ("/docs/team", "/x/team")),
    ("copy", {"src": "/staging/tree", "dst": "/docs/team"}, ("/staging/tree", "/docs/team")),
    ("move", {"src": "/staging/tree", "dst": "/docs/team"}, ("/staging/tree", "/docs/team")),
    ("delete", {"path": "/docs/team/protected", "recursive": True}, ("/docs/team/protected",)),
    ("delete", {"path": "/docs/team/protected/salaries.md"}, ()),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "trees"), ASKED, ids=[f"{t} {a}" for t, a, _ in ASKED]
)
async def test_a_tree_call_that_could_touch_a_protected_path_is_asked(
    tool: str, arguments: dict[str, Any], trees: tuple[str, ...]
) -> None:
    ws = await _workspace()
    approver = Recorder(answer=False)
    tools = Toolset(ws, approval=Approval(approver, paths=(PROTECTED,)))
    before = await _snapshot(ws)
    out = await tools.call(tool, arguments)
    assert out["success"] is False and "not approved" in out["error"]
    (request,) = approver.asked
    assert request.tool == tool and request.trees == trees
    assert request.principal == "agent"
    assert await _snapshot(ws) == before


@pytest.mark.parametrize(
    ("pattern", "tool", "arguments"),
    [
        ("/docs/*/protected/**", "delete", {"path": "/docs/team", "recursive": True}),
        ("**/salaries.md", "move", {"src": "/docs/team", "dst": "/elsewhere/t"}),
        ("/docs/team/protected/*.md", "copy", {"src": "/docs/team", "dst": "/x/t"}),
        ("/x/t/protected/**", "copy", {"src": "/docs/team", "dst": "/x/t"}),
        ("/x/**", "copy", {"src": "/docs/team", "dst": "/x/t"}),
        (
            "/elsewhere/t/deep/[a-z]*.md",
            "move",
            {"src": "/docs/team/protected", "dst": "/elsewhere/t"},
        ),
    ],
)
async def test_wildcard_patterns_are_intersected_with_the_trees(
    pattern: str, tool: str, arguments: dict[str, Any]
) -> None:
    ws = await _workspace()
    approver = Recorder(answer=False)
    tools = Toolset(ws, approval=Approval(approver, paths=(pattern,)))
    out = await tools.call(tool, arguments)
    assert out["success"] is False and len(approver.asked) == 1, out


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("delete", {"path": "/docs/other", "recursive": True}),
        ("move", {"src": "/staging/tree", "dst": "/elsewhere/tree"}),
        ("move", {"src": "/docs/other", "dst": "/docs/team/elsewhere"}),  # beside, not inside
        ("copy", {"src": "/docs/other", "dst": "/x/other"}),
        ("move", {"src": "/docs/team/plan.md", "dst": "/docs/team/plan2.md"}),  # files only
        ("write_file", {"path": "/docs/team/new.md", "content": "x"}),
    ],
)
async def test_a_call_that_cannot_touch_a_protected_path_is_not_asked(
    tool: str, arguments: dict[str, Any]
) -> None:
    ws = await _workspace()
    approver = Recorder(answer=False)
    tools = Toolset(ws, approval=Approval(approver, paths=(PROTECTED,)))
    if tool == "move" and arguments["src"].endswith(".md"):
        await tools.call("read_file", {"path": arguments["src"]})
    if tool == "delete":
        await _read_all(tools, ws, arguments["path"])
    out = await tools.call(tool, arguments)
    assert approver.asked == [] and out["success"] is True, out


async def test_a_wildcard_pattern_does_not_ask_about_single_files() -> None:
    ws = await _workspace()
    approver = Recorder(answer=False)
    tools = Toolset(ws, approval=Approval(approver, paths=("**/*.secret",)))
    await tools.call("read_file", {"path": "/docs/readme.md"})
    assert (await tools.call("move", {"src": "/docs/readme.md", "dst": "/docs/r.md"}))["success"]
    assert (await tools.call("write_file", {"path": "/docs/n.md", "content": "n"}))["success"]
    assert approver.asked == []
    out = await tools.call("delete", {"path": "/docs/other", "recursive": True})
    assert out["success"] is False and [r.tool for r in approver.asked] == ["delete"]


async def test_an_approved_tree_call_runs() -> None:
    ws = await _workspace()
    approver = Recorder(answer=True)
    tools = Toolset(ws, approval=Approval(approver, paths=(PROTECTED,)))
    moved = await tools.call("move", {"src": "/docs/team", "dst": "/elsewhere/team"})
    assert moved["success"] is True, moved
    assert await ws.read_text("/elsewhere/team/protected/salaries.md") == "salaries\n"
    assert not await ws.exists("/docs/team")
    assert len(approver.asked) == 1


async def test_a_hidden_tree_is_not_told_to_the_approver_and_stays() -> None:
    policy = Policy(
        rules=(
            Rule.deny("*", "/docs/team/**", principals={"agent"}),
            Rule.allow("*", "/**"),
        )
    )
    ws = await _workspace(policy)
    approver = Recorder(answer=True)
    tools = Toolset(ws, approval=Approval(approver, paths=(PROTECTED,)))
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert out == {"success": False, "error": "/docs/team not found"}
    assert all(request.trees == () for request in approver.asked)
    assert await ws.with_principal(Principal.of("owner")).exists("/docs/team/plan.md")


# -- read before write, for trees ------------------------------------------------------------


async def test_deleting_a_file_needs_it_read() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    out = await tools.call("delete", {"path": "/docs/readme.md"})
    assert out["success"] is False
    assert out["error"] == (
        "/docs/readme.md exists and was not read in this session; read it first (read_file), "
        "then delete it"
    )
    assert await ws.exists("/docs/readme.md")
    await tools.call("read_file", {"path": "/docs/readme.md"})
    assert (await tools.call("delete", {"path": "/docs/readme.md"}))["success"] is True
    intent = Toolset(ws, style="intent")
    out = await intent.call("update", {"path": "/docs/other/notes.md", "operation": "delete"})
    assert out["success"] is False and "read it first" in out["error"]


async def test_a_recursive_delete_needs_every_file_read_and_names_the_rest() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    await tools.call("read_file", {"path": "/docs/team/plan.md"})
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert out["success"] is False
    assert out["error"] == (
        "cannot delete /docs/team yet: read these files first (read_file), then retry: "
        "/docs/team/protected/deep/review.md, /docs/team/protected/salaries.md "
        "(not read in this session, or changed since)"
    )
    assert await ws.exists("/docs/team/protected/salaries.md")
    await _read_all(tools, ws, "/docs/team")
    assert (await tools.call("delete", {"path": "/docs/team", "recursive": True}))["success"]
    assert not await ws.exists("/docs/team")


async def test_a_refusal_counts_what_it_does_not_name() -> None:
    ws = await _workspace()
    for n in range(8):
        await ws.write(f"/x/many/f{n}.md", f"{n}\n")
    out = await Toolset(ws).call("delete", {"path": "/x/many", "recursive": True})
    assert out["success"] is False and out["error"].endswith(
        "/x/many/f4.md and 3 more (not read in this session, or changed since)"
    )


async def test_files_this_session_wrote_count_as_read() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    for name in ("a", "b/c", "b/d/e"):
        await tools.call("write_file", {"path": f"/x/scratch/{name}.md", "content": name})
    assert (await tools.call("delete", {"path": "/x/scratch", "recursive": True}))["success"]


async def test_a_file_changed_since_it_was_read_blocks_the_tree_delete() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    await _read_all(tools, ws, "/docs/team")
    await ws.write("/docs/team/plan.md", "rewritten by someone else\n")  # another writer
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert out["success"] is False
    assert "read these files first" in out["error"] and "/docs/team/plan.md" in out["error"]
    assert "salaries" not in out["error"]  # only the changed one
    assert await ws.read_text("/docs/team/plan.md") == "rewritten by someone else\n"
    await tools.call("read_file", {"path": "/docs/team/plan.md"})
    assert (await tools.call("delete", {"path": "/docs/team", "recursive": True}))["success"]


async def test_an_empty_directory_needs_no_read() -> None:
    ws = await _workspace()
    await ws.mkdir("/x/empty/inner")
    tools = Toolset(ws)
    assert (await tools.call("delete", {"path": "/x/empty/inner"}))["success"] is True
    assert (await tools.call("delete", {"path": "/x/empty", "recursive": True}))["success"]


async def test_copying_a_tree_over_a_directory_needs_the_replaced_files_read() -> None:
    ws = await _workspace()
    await ws.write("/x/team/plan.md", "precious plan\n")
    await ws.write("/x/team/protected/salaries.md", "precious salaries\n")
    await ws.write("/x/team/kept.md", "not in the source\n")
    tools = Toolset(ws)
    args = {"src": "/docs/team", "dst": "/x/team", "overwrite": True}
    out = await tools.call("copy", args)
    assert out["success"] is False
    assert out["error"] == (
        "cannot copy /docs/team over /x/team yet: read these files first (read_file), then "
        "retry: /x/team/plan.md, /x/team/protected/salaries.md (not read in this session, or "
        "changed since)"
    )
    assert await ws.read_text("/x/team/plan.md") == "precious plan\n"
    assert not await ws.exists("/x/team/protected/deep/review.md")
    await tools.call("read_file", {"path": "/x/team/plan.md"})
    await tools.call("read_file", {"path": "/x/team/protected/salaries.md"})
    assert (await tools.call("copy", args))["success"] is True
    assert await ws.read_text("/x/team/plan.md") == "plan\n"
    assert await ws.read_text("/x/team/protected/deep/review.md") == "review\n"
    assert await ws.read_text("/x/team/kept.md") == "not in the source\n"


async def test_copying_a_tree_without_overwrite_or_into_a_new_place_needs_no_read() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    assert (await tools.call("copy", {"src": "/docs/team", "dst": "/x/fresh"}))["success"]
    await ws.write("/x/clash/plan.md", "there\n")
    out = await tools.call("copy", {"src": "/docs/team", "dst": "/x/clash"})
    assert out["success"] is False and "already exists" in out["error"]


async def test_a_read_first_refusal_never_names_a_hidden_file() -> None:
    policy = Policy(
        rules=(
            Rule.deny("*", "/docs/team/protected/**", principals={"agent"}),
            Rule.allow("*", "/**"),
        )
    )
    ws = await _workspace(policy)
    tools = Toolset(ws)
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert out["success"] is False and "/docs/team/plan.md" in out["error"]
    assert "protected" not in out["error"] and "salaries" not in out["error"]
    await tools.call("read_file", {"path": "/docs/team/plan.md"})
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert "protected" not in repr(out)  # what the guard then does, it does without naming
    owner = ws.with_principal(Principal.of("owner"))
    assert await owner.read_text("/docs/team/protected/salaries.md") == "salaries\n"


async def test_where_the_principal_may_not_delete_the_guard_answers_first() -> None:
    ws = await _workspace()
    tools = Toolset(ws)
    out = await tools.call("delete", {"path": "/ro/anything.md"})
    assert out["success"] is False and "read-only" in out["error"]
    denied = Policy(rules=(Rule.deny("delete", "/docs/**"), Rule.allow("*", "/**")))
    tools = Toolset(await _workspace(denied))
    out = await tools.call("delete", {"path": "/docs/team", "recursive": True})
    assert out["success"] is False and "not allowed by policy" in out["error"]


async def test_approval_fails_closed_when_the_tree_cannot_be_told() -> None:
    """A stat that fails for another reason than "not there" (here a write-only mount, where
    nothing can be stat'ed) counts the named paths as trees: the approver is asked."""
    ws = Workspace(
        [Mount.of("/work", MemoryStore()), Mount.of("/drop", MemoryStore(), "write_only")],
        policy=Policy.allow_all(),
    )
    approver = Recorder(answer=False)
    tools = Toolset(ws, approval=Approval(approver, paths=("/drop/box/protected/**",)))
    out = await tools.call("delete", {"path": "/drop/box", "recursive": True})
    assert out["success"] is False and "not approved" in out["error"]
    (request,) = approver.asked
    assert request.trees == ("/drop/box",)
