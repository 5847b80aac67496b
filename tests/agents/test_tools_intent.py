"""The intent tools (access, discover, update) end to end."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from bastion import LocalStore, MemoryStore, Mount, Policy, Workspace
from bastion.agents.tools import Toolset
from bastion.knowledge.engine import Knowledge

_OLD = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
_NEW = datetime(2025, 6, 1, tzinfo=UTC).timestamp()


def _tools(tmp_path: Path, knowledge: Knowledge | None = None) -> Toolset:
    files = {
        "old.md": ("# Old\n\nThe legacy deploy uses ftp.\n", _OLD),
        "new.md": ("# New\n\nThe new deploy uses containers.\nSee [old](old.md).\n", _NEW),
        "data/big.csv": ("x," * 2000 + "\n", _NEW),
    }
    for rel, (text, mtime) in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        os.utime(target, (mtime, mtime))
    mounts = [
        Mount.of("/docs", LocalStore(tmp_path), "read_only"),
        Mount.of("/work", MemoryStore()),
    ]
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=knowledge)
    return Toolset(ws, style="intent")


async def test_access_reads_describes_and_checks(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    read = await tools.call("access", {"path": "/docs/old.md", "limit": 1})
    assert read == {
        "success": True,
        "path": "/docs/old.md",
        "content": "     1\t# Old\n[... more lines: call again with offset=1]",
        "next_offset": 1,
    }
    meta = await tools.call("access", {"path": "/docs/old.md", "operation": "metadata"})
    assert meta["kind"] == "file" and meta["modified"] == "2020-01-01T00:00:00Z"
    there = await tools.call("access", {"path": "/docs/new.md", "operation": "exists"})
    assert there == {"success": True, "path": "/docs/new.md", "exists": True}
    gone = await tools.call("access", {"path": "/docs/none.md", "operation": "exists"})
    assert gone["exists"] is False


async def test_discover_lists_with_criteria(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    everything = await tools.call("discover", {"path": "/docs"})
    assert everything["files"] == [
        "/docs/data/",
        "/docs/data/big.csv",
        "/docs/new.md",
        "/docs/old.md",
    ]
    markdown = await tools.call("discover", {"path": "/docs", "extension": "md"})
    assert markdown == {
        "success": True,
        "total_found": 2,
        "files": ["/docs/new.md", "/docs/old.md"],
    }
    recent = await tools.call("discover", {"path": "/docs", "modified_after": "2024-01-01"})
    assert recent["files"] == ["/docs/data/big.csv", "/docs/new.md"]
    older = await tools.call(
        "discover", {"path": "/docs", "modified_before": "2021-01-01T00:00:00Z"}
    )
    assert older["files"] == ["/docs/old.md"]
    big = await tools.call("discover", {"path": "/docs", "min_size": 1000})
    assert big["files"] == ["/docs/data/big.csv"]
    small = await tools.call("discover", {"path": "/docs", "max_size": 1000, "depth": 1})
    assert small["files"] == ["/docs/new.md", "/docs/old.md"]
    bad = await tools.call("discover", {"modified_after": "last tuesday"})
    assert bad["success"] is False and "modified_after" in bad["error"]


async def test_discover_searches_content_and_meaning(tmp_path: Path) -> None:
    knowledge = Knowledge()
    tools = _tools(tmp_path, knowledge)
    await tools.workspace.index_directory("/docs")
    content = await tools.call(
        "discover", {"operation": "search_content", "query": "DEPLOY", "path": "/docs"}
    )
    assert content["files"] == ["/docs/new.md", "/docs/old.md"]
    assert "/docs/new.md:3: The new deploy uses containers." in content["content"]
    recent = await tools.call(
        "discover",
        {"operation": "search_content", "query": "deploy", "modified_after": "2024-01-01"},
    )
    assert recent["files"] == ["/docs/new.md"] and "old.md" not in recent["content"]
    missing = await tools.call("discover", {"operation": "search_semantic"})
    assert missing == {
        "success": False,
        "error": "search_semantic needs a query; give the text to find",
    }
    semantic = await tools.call(
        "discover", {"operation": "search_semantic", "query": "containers deploy", "k": 1}
    )
    assert [h["path"] for h in semantic["hits"]] == ["/docs/new.md"]
    linked = await tools.call(
        "discover",
        {"operation": "search_semantic", "query": "containers", "k": 1, "follow_relations": True},
    )
    related = [h for h in linked["hits"] if h.get("related_to")]
    assert related and related[0]["path"] == "/docs/old.md"
    only_old = await tools.call(
        "discover",
        {"operation": "search_semantic", "query": "deploy", "modified_before": "2021-01-01"},
    )
    assert [h["path"] for h in only_old["hits"]] == ["/docs/old.md"]
    knowledge.close()


async def test_update_creates_replaces_appends_and_deletes(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    ws = tools.workspace
    made = await tools.call(
        "update", {"path": "/work/a/b.md", "operation": "create", "content": "one\n"}
    )
    assert made == {"success": True, "path": "/work/a/b.md", "size": 4, "created": True}
    no_parents = await tools.call(
        "update",
        {"path": "/work/x/y.md", "operation": "create", "content": "", "create_parents": False},
    )
    assert no_parents["success"] is False
    added = await tools.call(
        "update", {"path": "/work/a/b.md", "operation": "append", "content": "two\n"}
    )
    assert added == {"success": True, "path": "/work/a/b.md", "size": 8}
    replaced = await tools.call(
        "update",
        {"path": "/work/a/b.md", "operation": "update", "content": "three\n", "backup": True},
    )
    assert replaced["success"] is True, replaced
    assert await ws.read_text("/work/a/b.md") == "three\n"
    assert await ws.read_text("/work/a/b.md.bak") == "one\ntwo\n"
    empty = await tools.call("update", {"path": "/work/a/c.md", "operation": "append"})
    assert empty == {"success": False, "error": "append needs content; give the text to write"}
    gone = await tools.call("update", {"path": "/work/a/b.md", "operation": "delete"})
    assert gone == {"success": True, "path": "/work/a/b.md"}
    assert not await ws.exists("/work/a/b.md")
    read_only = await tools.call("update", {"path": "/docs/new.md", "operation": "delete"})
    assert read_only["success"] is False and "read-only" in read_only["error"]
