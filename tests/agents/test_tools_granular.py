"""The granular tools end to end on real stores (memory and a local folder)."""

from __future__ import annotations

from pathlib import Path

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.tools import Toolset
from bastion.knowledge.engine import Knowledge


def _tools(tmp_path: Path, knowledge: Knowledge | None = None, **kw: object) -> Toolset:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "setup.md").write_text(
        "# Setup\n\nInstall the agent.\nThen configure the agent.\n", encoding="utf-8"
    )
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    mounts = [
        Mount.of("/docs", LocalStore(tmp_path), "read_only"),
        Mount.of("/work", MemoryStore()),
    ]
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=knowledge)
    return Toolset(ws, **kw)  # type: ignore[arg-type]


async def test_stat_glob_and_grep(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    stat = await tools.call("stat", {"path": "/docs/notes.txt"})
    assert stat["kind"] == "file" and stat["size"] == 17
    assert stat["modified"].endswith("Z") and "T" in stat["modified"]
    directory = await tools.call("stat", {"path": "/docs/guide"})
    assert directory["kind"] == "directory" and "size" not in directory
    found = await tools.call("glob", {"pattern": "**/*.md"})
    assert found == {"success": True, "total_found": 1, "files": ["/docs/guide/setup.md"]}
    relative = await tools.call("glob", {"pattern": "*", "path": "/docs"})
    assert relative["files"] == ["/docs/guide/", "/docs/notes.txt"]
    grep = await tools.call("grep", {"pattern": "AGENT", "ignore_case": True, "glob": "*.md"})
    assert grep["content"] == "/docs/guide/setup.md:3: Install the agent.\n" + (
        "/docs/guide/setup.md:4: Then configure the agent."
    )
    assert grep["total_found"] == 2 and grep["files_matched"] == 1
    context = await tools.call("grep", {"pattern": "^beta$", "regex": True, "context": 1})
    assert context["content"].split("\n") == [
        "/docs/notes.txt-1- alpha",
        "/docs/notes.txt:2: beta",
        "/docs/notes.txt-3- gamma",
    ]
    assert context["total_found"] == 1
    bad = await tools.call("grep", {"pattern": "(a", "regex": True})
    assert bad["success"] is False and "invalid regular expression" in bad["error"]


async def test_mkdir_copy_move_delete(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    assert await tools.call("mkdir", {"path": "/work/a/b"}) == {
        "success": True,
        "path": "/work/a/b",
    }
    copied = await tools.call("copy", {"src": "/docs/guide", "dst": "/work/a/b/guide"})
    assert copied == {"success": True, "path": "/work/a/b/guide"}
    again = await tools.call("copy", {"src": "/docs/notes.txt", "dst": "/work/a/b/guide/setup.md"})
    assert again["success"] is False and "already exists" in again["error"]
    moved = await tools.call("move", {"src": "/work/a/b/guide/setup.md", "dst": "/work/setup.md"})
    assert moved == {"success": True, "path": "/work/setup.md"}
    read = await tools.call("read_file", {"path": "/work/setup.md", "limit": 1})
    assert read["content"].startswith("     1\t# Setup")
    not_empty = await tools.call("delete", {"path": "/work/a"})
    assert not_empty["success"] is False
    assert (await tools.call("delete", {"path": "/work/a", "recursive": True}))["success"]
    tree = (await tools.call("list_files", {"path": "/work"}))["tree"]
    assert tree == "/work/\n  setup.md (54 B)"
    refused = await tools.call("move", {"src": "/docs/notes.txt", "dst": "/work/n.txt"})
    assert refused["success"] is False and "read-only" in refused["error"]


async def test_edit_needs_a_unique_string_or_replace_all(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    await tools.call("write_file", {"path": "/work/t.md", "content": "a a a\n"})
    args = {"path": "/work/t.md", "old_string": "a", "new_string": "b"}
    twice = await tools.call("edit_file", args)
    assert twice["success"] is False and "occurs 3 times" in twice["error"]
    everywhere = await tools.call("edit_file", {**args, "replace_all": True})
    assert everywhere == {"success": True, "path": "/work/t.md", "replacements": 3}
    absent = await tools.call("edit_file", args)
    assert absent["success"] is False and "not found in /work/t.md" in absent["error"]


async def test_search_and_ask_never_show_what_the_principal_may_not_read(tmp_path: Path) -> None:
    (tmp_path / "hr").mkdir()
    (tmp_path / "hr" / "pay.md").write_text(
        "# Pay\n\nThe agent salary band is confidential.\n", encoding="utf-8"
    )
    knowledge = Knowledge()
    tools = _tools(tmp_path, knowledge)
    admin_view = tools.workspace
    await admin_view.index_directory("/docs")
    policy = Policy(rules=(Rule.deny("*", "/docs/hr/**"), Rule.allow("*", "/**")))
    mounts = list(admin_view.mounts)
    ws = Workspace(mounts, policy=policy, knowledge=knowledge, principal=Principal.of("agent"))
    agent = Toolset(ws)
    hits = await agent.call("search", {"query": "agent"})
    assert hits["success"] and hits["total_found"] >= 1
    assert all(not h["path"].startswith("/docs/hr") for h in hits["hits"])
    assert hits["hits"][0]["path"] == "/docs/guide/setup.md"
    assert {"path", "lines", "score", "snippet"} <= set(hits["hits"][0])
    keyword = await agent.call("search", {"query": "agent", "mode": "bm25", "k": 1})
    assert len(keyword["hits"]) == 1
    dense = await agent.call("search", {"query": "agent", "mode": "vector"})
    assert dense["success"] is False and "keyword-only" in dense["error"]
    answer = await agent.call("ask", {"question": "How do I install the agent?"})
    assert answer["success"] and answer["status"] == "answered"
    assert answer["citations"] and all("/docs/hr" not in c for c in answer["citations"])
    assert answer["citations"][0].startswith("[1] /docs/guide/setup.md:")
    assert "[1]" in answer["answer"] and "§" not in answer["answer"]
    secret = await agent.call("ask", {"question": "What is the salary band?"})
    assert "confidential" not in secret["answer"]
    knowledge.close()
