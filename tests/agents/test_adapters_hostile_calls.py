"""Every adapter answers a hostile tool call alike: hidden as absent, bad arguments as one-line
tool errors (red-team variants, area E).

Classes pinned (docs/security.md, "adapters"): a hidden file and an absent one give the same
answer through the tool set, MCP, LangChain, Pydantic AI and OpenAI function calling (the
answer differs only by the path named); hostile arguments (nesting deeper than the
interpreter recurses, integers of thousands of digits, lone surrogates, arguments that are no
object, names that are not strings) come back as one-line tool errors and never raise out of
an adapter or the tool set.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from bastion import MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.agents.langchain import langchain_tools
from bastion.agents.mcp import mcp_server
from bastion.agents.openai import OpenAITools
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.tools import Toolset
from bastion.agents.tools.outputs import dumps

HIDDEN = "/docs/private/pay.md"
ABSENT = "/docs/private/none.md"


async def _toolset() -> Toolset:
    docs = MemoryStore()
    owner = Workspace([Mount.of("/docs", docs)], policy=Policy.allow_all())
    await owner.write(HIDDEN, "salary zebra\nline two\n")
    await owner.write("/docs/open.md", "hello\n")
    policy = Policy(rules=(Rule.deny("*", "/docs/private/**"), Rule.allow("*", "/**")))
    ws = Workspace([Mount.of("/docs", docs)], policy=policy, principal=Principal.of("agent"))
    return Toolset(ws)


def _deep(levels: int) -> dict[str, Any]:
    deep: dict[str, Any] = {}
    cur = deep
    for _ in range(levels):
        cur["a"] = {}
        cur = cur["a"]
    return deep


def _huge() -> int:
    n = 1
    for _ in range(17_000):  # about 5,100 digits, past int's string conversion limit
        n *= 2
    return n


HOSTILE: list[Any] = [
    {"path": _deep(3_000)},
    {"path": "/docs/open.md", "offset": _huge()},
    {"path": _huge()},
    {"path": "/docs/\ud800"},
    {"\ud800": "x"},
    {1: "/docs/open.md"},
    "/docs/open.md",
    ["path"],
    5,
    None,
]

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "{p}"}),
    ("read_file", {"path": "{p}", "offset": 1, "limit": 1}),
    ("stat", {"path": "{p}"}),
    ("grep", {"pattern": "zebra", "path": "{p}"}),
    ("edit_file", {"path": "{p}", "old_string": "zebra", "new_string": "x"}),
    ("delete", {"path": "{p}"}),
]


def _args(template: dict[str, Any], path: str) -> dict[str, Any]:
    return {k: path if v == "{p}" else v for k, v in template.items()}


async def _through_all(tools: Toolset, name: str, args: dict[str, Any]) -> list[str]:
    """The call's output text through each adapter (the same compact JSON in each)."""
    outs = [dumps(await tools.call(name, args)), await OpenAITools(tools).call(name, args)]
    outs.append(await OpenAITools(tools).call(name, json.dumps(args)))
    lc = {t.name: t for t in langchain_tools(tools)}[name]
    message = await lc.ainvoke({"type": "tool_call", "name": name, "id": "c1", "args": args})
    outs.append(str(message.content))
    pai = BastionToolset(tools)
    tool = (await pai.get_tools(None))[name]  # type: ignore[arg-type]
    outs.append(dumps(await pai.call_tool(name, dict(args), None, tool)))  # type: ignore[arg-type]
    async with Client(mcp_server(tools)) as client:
        result = await client.call_tool(name, args)
        outs.append(result.content[0].text)  # type: ignore[union-attr]
    return outs


@pytest.mark.parametrize(("name", "template"), CALLS)
async def test_hidden_and_absent_answer_alike_through_every_adapter(
    name: str, template: dict[str, Any]
) -> None:
    tools = await _toolset()
    hidden = await _through_all(tools, name, _args(template, HIDDEN))
    absent = await _through_all(tools, name, _args(template, ABSENT))
    assert [h.replace(HIDDEN, "P") for h in hidden] == [a.replace(ABSENT, "P") for a in absent]
    assert len(set(hidden)) == 1  # every adapter gives the same answer
    assert "zebra" not in "".join(hidden) and json.loads(hidden[0])["success"] is False


@pytest.mark.parametrize("arguments", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_arguments_are_tool_errors_everywhere(arguments: Any) -> None:
    tools = await _toolset()
    direct = await tools.call("read_file", arguments)
    assert direct["success"] is False and "unexpectedly" not in direct["error"]
    openai = json.loads(await OpenAITools(tools).call("read_file", arguments))
    assert openai["success"] is False and "unexpectedly" not in openai["error"]
    lc = {t.name: t for t in langchain_tools(tools)}["read_file"]
    call = {"type": "tool_call", "name": "read_file", "id": "c1", "args": arguments}
    message = await lc.ainvoke(call)
    assert message.status == "error"
    assert json.loads(message.content)["success"] is False
    plain = lc.invoke(arguments)  # the blocking path, arguments given directly
    assert json.loads(plain)["success"] is False


@pytest.mark.parametrize("name", [["read_file"], {"a": 1}, None, 5, "\ud800", "x" * 100_000])
async def test_a_tool_name_of_any_type_is_an_unknown_tool(name: Any) -> None:
    tools = await _toolset()
    out = await tools.call(name, {})
    assert out["success"] is False and out["error"].startswith("unknown tool ")
    assert len(out["error"]) < 400
    assert name not in tools and tools.get(name) is None
    assert json.loads(await OpenAITools(tools).call(name, {}))["success"] is False


@pytest.mark.parametrize(
    "arguments",
    [{"path": "\ud800"}, {"path": "/docs/open.md", "offset": 10**30}, {"path": 10**30}],
)
async def test_hostile_arguments_through_mcp_are_tool_errors(arguments: dict[str, Any]) -> None:
    tools = await _toolset()
    async with Client(mcp_server(tools)) as client:
        result = await client.call_tool("read_file", arguments)
    assert result.is_error is True
    assert json.loads(result.content[0].text)["success"] is False  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "raw",
    [
        '{"path":"\\ud800"}',
        '{"path":"/docs/open.md","offset":' + "9" * 5_000 + "}",
        '{"path":' + "[" * 3_000 + "]" * 3_000 + "}",
        '{"path":"/docs/open.md","offset":1e999}',
        '"/docs/open.md"',
        "[1]",
    ],
)
async def test_hostile_json_through_a_pydantic_ai_agent_never_raises(raw: str) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    answered: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not answered:
            answered.append("called")
            return ModelResponse(parts=[ToolCallPart("read_file", raw, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    tools = await _toolset()
    run = await Agent(FunctionModel(model), toolsets=[BastionToolset(tools)]).run("go")
    assert run.output == "done"
    returned = [
        str(p.content)
        for m in run.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryPromptPart)
    ]
    assert len(returned) == 1  # the call came back to the model as an error to correct
    assert "hello" not in returned[0]  # the file was never read with unreadable arguments
