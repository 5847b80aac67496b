"""Output shapes: flat, small, cut with a marker, resumable exactly, large results offloaded
to a session scratch that read_file pages through."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bastion import MemoryStore, Mount, Policy, Rule, Workspace
from bastion.agents.tools import OutputLimits, Toolset
from bastion.knowledge.engine import Knowledge


def _workspace(knowledge: Knowledge | None = None) -> Workspace:
    mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
    policy = Policy(rules=(Rule.allow("*", "/**"),))  # file actions: no execute tool here
    return Workspace(mounts, policy=policy, knowledge=knowledge)


def _is_flat(value: Any, depth: int = 0) -> bool:
    """Scalars, lists of scalars, or (for hits) lists of flat records: never a nested object."""
    if isinstance(value, str | int | float | bool) or value is None:
        return True
    if isinstance(value, list):
        return all(_is_flat(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth == 1:
        return all(isinstance(v, str | int | float | bool) for v in value.values())
    return False


def _body(content: str) -> list[str]:
    """The text of each numbered line of read_file output (the marker line left out)."""
    lines = []
    for line in content.split("\n"):
        if line.startswith("[... more lines"):
            continue
        number, sep, text = line.partition("\t")
        assert sep and number.strip().isdigit(), line
        lines.append(text)
    return lines


async def test_every_output_is_flat_with_success_first() -> None:
    knowledge = Knowledge()
    ws = _workspace(knowledge)
    tools = Toolset(ws)
    calls = [
        ("write_file", {"path": "/work/a.md", "content": "# A\n\nalpha beta\n"}),
        ("read_file", {"path": "/work/a.md"}),
        ("edit_file", {"path": "/work/a.md", "old_string": "beta", "new_string": "gamma"}),
        ("list_files", {"path": "/"}),
        ("glob", {"pattern": "**/*.md"}),
        ("grep", {"pattern": "alpha"}),
        ("stat", {"path": "/work/a.md"}),
        ("mkdir", {"path": "/work/sub"}),
        ("copy", {"src": "/work/a.md", "dst": "/work/sub/b.md"}),
        ("move", {"src": "/work/sub/b.md", "dst": "/work/sub/c.md"}),
        ("search", {"query": "alpha"}),
        ("ask", {"question": "what comes after alpha?"}),
        ("delete", {"path": "/work/sub", "recursive": True}),
        ("read_file", {"path": "/work/missing.md"}),
    ]
    assert sorted(tools.names) == sorted({name for name, _ in calls})
    for name, args in calls:
        out = await tools.call(name, args)
        assert next(iter(out)) == "success", (name, out)
        assert "data" not in out and "result" not in out
        assert all(_is_flat(v) for v in out.values()), (name, out)
        if out["success"]:
            assert "error" not in out
        else:
            assert set(out) == {"success", "error"} and "\n" not in out["error"]
    hits = (await tools.call("search", {"query": "alpha"}))["hits"]
    assert hits[0]["path"] == "/work/a.md" and re.fullmatch(r"\d+-\d+", hits[0]["lines"])
    knowledge.close()


async def test_reading_page_by_page_with_next_offset_gives_back_every_line_once() -> None:
    ws = _workspace()
    original = [f"line {i} " + "x" * (i % 37) for i in range(1, 1235)]
    await ws.write("/work/big.txt", "\n".join(original) + "\n")
    tools = Toolset(ws, limits=OutputLimits(max_chars=900))
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        out = await tools.call(
            "read_file", {"path": "/work/big.txt", "offset": offset, "limit": 100}
        )
        assert out["success"], out
        page = _body(out["content"])
        assert out["content"].split("\n")[0].startswith(f"{offset + 1:>6}\t")
        seen += page
        offset = out.get("next_offset")
        if offset is not None:
            assert out["content"].endswith(f"[... more lines: call again with offset={offset}]")
            assert len(out["content"]) < 900 + 60
        pages += 1
    assert seen == original
    assert pages > 1234 // 100  # the character cap cut pages shorter than the limit


async def test_the_last_page_has_no_marker_and_no_next_offset() -> None:
    ws = _workspace()
    await ws.write("/work/three.txt", "a\nb\nc")
    tools = Toolset(ws)
    out = await tools.call("read_file", {"path": "/work/three.txt", "offset": 1})
    assert out == {"success": True, "path": "/work/three.txt", "content": "     2\tb\n     3\tc"}
    exact = await tools.call("read_file", {"path": "/work/three.txt", "limit": 3})
    assert "next_offset" not in exact
    past = await tools.call("read_file", {"path": "/work/three.txt", "offset": 3})
    assert past == {
        "success": False,
        "error": "/work/three.txt: offset 3 is past the end of the file; read from offset 0",
    }
    await ws.write("/work/empty.txt", "")
    empty = await tools.call("read_file", {"path": "/work/empty.txt"})
    assert empty == {"success": True, "path": "/work/empty.txt", "content": ""}


async def test_a_very_long_line_is_cut_with_a_marker() -> None:
    ws = _workspace()
    await ws.write("/work/long.txt", "short\n" + "y" * 5000 + "\nafter\n")
    tools = Toolset(ws, limits=OutputLimits(max_line_chars=100))
    out = await tools.call("read_file", {"path": "/work/long.txt"})
    lines = out["content"].split("\n")
    assert lines[1] == "     2\t" + "y" * 100 + " [... line cut: 4900 more characters]"
    assert lines[2] == "     3\tafter"


async def test_a_binary_file_is_refused_as_text() -> None:
    ws = _workspace()
    await ws.write("/work/blob.bin", b"\x00\x01\x02binary")
    out = await Toolset(ws).call("read_file", {"path": "/work/blob.bin"})
    assert out == {
        "success": False,
        "error": "/work/blob.bin is a binary file; it cannot be shown as text",
    }


async def test_a_large_grep_result_goes_to_the_scratch_and_read_file_pages_through_it() -> None:
    ws = _workspace()
    await ws.write("/work/log.txt", "".join(f"event {i} happened\n" for i in range(400)))
    tools = Toolset(ws, limits=OutputLimits(max_chars=1000))
    out = await tools.call("grep", {"pattern": "happened"})
    assert out["success"] and out["truncated"] is True and out["total_found"] == 400
    path = out["full_result"]
    assert path.startswith("/.tool-results/grep-")
    assert len(out["content"]) < 1000 + 200
    assert f"the whole result is in {path}" in out["content"]
    lines: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await tools.call("read_file", {"path": path, "offset": offset})
        lines += _body(page["content"])
        offset = page.get("next_offset")
    assert lines == [f"/work/log.txt:{i + 1}: event {i} happened" for i in range(400)]
    # The scratch is the session's own: it is not in the workspace, nor in another session.
    assert not await ws.exists(path)
    other = await Toolset(ws).call("read_file", {"path": path})
    assert other["success"] is False


async def test_without_offloading_the_marker_asks_for_a_narrower_call() -> None:
    ws = _workspace()
    await ws.write("/work/log.txt", "".join(f"event {i}\n" for i in range(400)))
    tools = Toolset(ws, limits=OutputLimits(max_chars=500, offload=False))
    out = await tools.call("grep", {"pattern": "event"})
    assert out["truncated"] is True and "full_result" not in out
    assert out["content"].endswith("more characters cut; narrow the pattern, the path or the glob]")


async def test_a_long_listing_shows_the_first_entries_and_keeps_the_rest() -> None:
    ws = _workspace()
    for i in range(30):
        await ws.write(f"/work/f{i:02}.md", "x")
    tools = Toolset(ws, limits=OutputLimits(max_entries=5))
    out = await tools.call("glob", {"pattern": "**/*.md"})
    assert out["files"] == [f"/work/f{i:02}.md" for i in range(5)]
    assert out["total_found"] == 30 and out["truncated"] is True
    page = await tools.call("read_file", {"path": out["full_result"]})
    assert _body(page["content"]) == [f"/work/f{i:02}.md" for i in range(30)]


async def test_the_scratch_drops_its_oldest_results() -> None:
    ws = _workspace()
    await ws.write("/work/log.txt", "".join(f"hit {i}\n" for i in range(100)))
    tools = Toolset(ws, limits=OutputLimits(max_chars=100, scratch_items=2))
    paths = [(await tools.call("grep", {"pattern": "hit"}))["full_result"] for _ in range(3)]
    assert len(set(paths)) == 3
    gone = await tools.call("read_file", {"path": paths[0]})
    assert gone["success"] is False and "run the tool again" in gone["error"]
    assert (await tools.call("read_file", {"path": paths[2]}))["success"] is True


async def test_list_files_is_a_compact_tree_with_depth() -> None:
    ws = _workspace()
    await ws.write("/work/a/b/c/deep.md", "x" * 2048)
    await ws.write("/work/top.md", "hello")
    tools = Toolset(ws)
    out = await tools.call("list_files", {"path": "/work", "depth": 2})
    assert out == {
        "success": True,
        "path": "/work",
        "total_found": 3,
        "tree": "/work/\n  a/\n    b/\n  top.md (5 B)",
    }
    deep = await tools.call("list_files", {"path": "/work/a", "depth": 5})
    assert deep["tree"].endswith("      deep.md (2.0 KB)")


@pytest.mark.parametrize("name", ["read_file", "write_file", "grep", "nope"])
async def test_bad_calls_are_one_line_errors(name: str) -> None:
    tools = Toolset(_workspace())
    out = await tools.call(name, {"path": 3, "unexpected": True})
    assert out["success"] is False and set(out) == {"success", "error"}
    assert "\n" not in out["error"] and len(out["error"]) <= 400
