"""The MCP server in-process, through the official MCP client (both protocol eras)."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.mcp import mcp_server
from bastion.agents.tools import Approval, Toolset


def _toolset(**kw: object) -> Toolset:
    policy = Policy(rules=(Rule.deny("*", "/docs/private/**"), Rule.allow("*", "/**")))
    docs = MemoryStore()
    mounts = [Mount.of("/docs", docs, "read_only"), Mount.of("/work", MemoryStore())]
    ws = Workspace(mounts, policy=policy, principal=Principal.of("mcp-agent"))
    return Toolset(ws, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_list_is_the_tool_set(mode: str) -> None:
    tools = _toolset()
    async with Client(mcp_server(tools), mode=mode) as client:
        listed = (await client.list_tools()).tools
        assert client.instructions == tools.filesystem_map()
    assert [t.name for t in listed] == tools.names
    for mcp_tool, schema in zip(listed, tools.schemas(), strict=True):
        assert mcp_tool.description == schema["description"]
        assert mcp_tool.input_schema == schema["parameters"]
    hints = {t.name: t.annotations.read_only_hint if t.annotations else None for t in listed}
    assert hints["read_file"] is True and hints["grep"] is True
    assert hints["write_file"] is None and hints["delete"] is None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calls_and_errors_through_mcp(mode: str) -> None:
    tools = _toolset()
    async with Client(mcp_server(tools), mode=mode) as client:
        wrote = await client.call_tool("write_file", {"path": "/work/a.md", "content": "hi\n"})
        assert wrote.is_error is False
        assert json.loads(wrote.content[0].text) == {  # type: ignore[union-attr]
            "success": True,
            "path": "/work/a.md",
            "size": 3,
            "created": True,
        }
        read = await client.call_tool("read_file", {"path": "/work/a.md"})
        assert json.loads(read.content[0].text)["content"] == "     1\thi"  # type: ignore[union-attr]
        hidden = await client.call_tool("read_file", {"path": "/docs/private/pay.md"})
        assert hidden.is_error is True
        assert json.loads(hidden.content[0].text) == {  # type: ignore[union-attr]
            "success": False,
            "error": "/docs/private/pay.md not found",
        }
        bad = await client.call_tool("read_file", {"offset": "many"})
        assert bad.is_error is True
        assert "invalid arguments for read_file" in bad.content[0].text  # type: ignore[union-attr]
        unknown = await client.call_tool("format_disk", {})
        assert unknown.is_error is True


async def test_one_client_session_keeps_the_read_before_write_rule() -> None:
    tools = _toolset()
    await tools.workspace.write("/work/shared.md", "from someone else\n")
    async with Client(mcp_server(tools)) as client:
        blind = await client.call_tool("write_file", {"path": "/work/shared.md", "content": "x"})
        assert blind.is_error is True
        assert "read it first" in blind.content[0].text  # type: ignore[union-attr]
        await client.call_tool("read_file", {"path": "/work/shared.md"})
        ok = await client.call_tool("write_file", {"path": "/work/shared.md", "content": "x"})
        assert ok.is_error is False


async def test_an_approval_refusal_reaches_the_client() -> None:
    tools = _toolset(approval=Approval(lambda request: False, tools={"delete"}))
    await tools.workspace.write("/work/keep.md", "x")
    async with Client(mcp_server(tools)) as client:
        refused = await client.call_tool("delete", {"path": "/work/keep.md"})
    assert refused.is_error is True
    assert "not approved" in refused.content[0].text  # type: ignore[union-attr]
    assert await tools.workspace.exists("/work/keep.md")
