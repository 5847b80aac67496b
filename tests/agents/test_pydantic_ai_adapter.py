"""Pydantic AI: the tool set as a toolset, driven by Pydantic AI's own test models (a scripted
``FunctionModel`` and ``TestModel``, which calls every tool with arguments made from its
schema)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from bastion import MemoryStore, Mount, Policy, Principal, Rule, VPath, Workspace
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.skills import SkillLibrary
from bastion.agents.tools import Toolset
from bastion.core.errors import ConfigurationError

P = VPath.parse
SKILL = "---\nname: {name}\ndescription: The {name} skill.\n---\nSteps.\n"


async def _workspace() -> Workspace:
    docs, skills = MemoryStore(), MemoryStore()
    await docs.mkdir(P("/hr"))
    await docs.write(P("/guide.md"), b"# Guide\nAlways review.\n")
    await docs.write(P("/hr/pay.md"), b"secret bands\n")
    for name in ("payroll", "release-notes"):
        await skills.mkdir(P(f"/{name}"))
        await skills.write(P(f"/{name}/SKILL.md"), SKILL.format(name=name).encode())
    policy = Policy(
        rules=(
            Rule.deny("*", "/docs/hr/**"),
            Rule.deny("*", "/skills/payroll/**"),
            Rule.allow("*", "/**"),
        )
    )
    mounts = [
        Mount.of("/docs", docs, "read_only"),
        Mount.of("/work", MemoryStore()),
        Mount.of("/skills", skills, "read_only"),
    ]
    return Workspace(mounts, policy=policy, principal=Principal.of("pai-agent"))


class Script:
    """A ``FunctionModel`` function: one response per model request, and what each saw."""

    def __init__(self, *responses: list[ModelResponsePart]) -> None:
        self.responses = list(responses)
        self.seen: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(info)
        return ModelResponse(parts=self.responses[len(self.seen) - 1])


def _returns(messages: list[ModelMessage]) -> list[tuple[str, Any]]:
    return [
        (part.tool_name, part.content)
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


async def test_a_scripted_agent_run() -> None:
    ws = await _workspace()
    script = Script(
        [ToolCallPart("read_file", {"path": "/docs/guide.md"})],
        [
            ToolCallPart("read_file", {"path": "/docs/hr/pay.md"}),
            ToolCallPart("write_file", {"path": "/docs/guide.md", "content": "x"}),
            ToolCallPart("write_file", {"path": "/work/plan.md", "content": "step one\n"}),
        ],
        [
            ToolCallPart(
                "edit_file", {"path": "/work/plan.md", "old_string": "one", "new_string": "1"}
            )
        ],
        [ToolCallPart("read_file", {"path": "/work/plan.md", "offset": -1_000_001})],
        [TextPart("Done")],
    )
    toolset = BastionToolset(Toolset(ws), skills=SkillLibrary(ws, ["/skills"]))
    result = await Agent(FunctionModel(script), toolsets=[toolset]).run("plan it")

    assert result.output == "Done"
    returns = _returns(result.all_messages())
    assert [name for name, _ in returns] == [
        "read_file",
        "read_file",
        "write_file",
        "write_file",
        "edit_file",
        "read_file",
    ]
    outputs = [out for _, out in returns]
    assert outputs[0]["content"] == "     1\t# Guide\n     2\tAlways review."
    assert outputs[1] == {"success": False, "error": "/docs/hr/pay.md not found"}
    assert "read-only" in outputs[2]["error"]
    assert outputs[3] == {"success": True, "path": "/work/plan.md", "size": 9, "created": True}
    assert outputs[4]["success"] is True
    assert outputs[5]["error"].startswith("invalid arguments for read_file: offset")
    assert await ws.read_text("/work/plan.md") == "step 1\n"

    info = script.seen[0]
    instructions = info.instructions or ""
    assert instructions.startswith("Filesystem (absolute paths")
    assert '<skill name="release-notes">The release-notes skill.</skill>' in instructions
    assert "payroll" not in instructions  # a skill the principal may not read
    defs = {d.name: d for d in info.function_tools}
    assert [d.name for d in info.function_tools] == Toolset(ws).names
    for schema in Toolset(ws).schemas():
        tool_def = defs[schema["name"]]
        assert tool_def.description == schema["description"]
        assert tool_def.parameters_json_schema == schema["parameters"]
    assert defs["write_file"].sequential and not defs["read_file"].sequential


async def test_a_write_waits_for_the_read_before_it_in_one_response() -> None:
    ws = await _workspace()
    await ws.write("/work/notes.md", "draft\n")
    script = Script(
        [
            ToolCallPart("read_file", {"path": "/work/notes.md"}),
            ToolCallPart("write_file", {"path": "/work/notes.md", "content": "final\n"}),
        ],
        [TextPart("ok")],
    )
    result = await Agent(FunctionModel(script), toolsets=[BastionToolset(Toolset(ws))]).run("go")
    assert [out["success"] for _, out in _returns(result.all_messages())] == [True, True]
    assert await ws.read_text("/work/notes.md") == "final\n"


async def test_every_tool_answers_the_arguments_test_model_makes() -> None:
    ws = await _workspace()
    toolset = Toolset(ws)
    result = await Agent(TestModel(), toolsets=[BastionToolset(toolset)]).run("go")
    returns = dict(_returns(result.all_messages()))
    assert set(returns) == set(toolset.names)
    for name, out in returns.items():  # flat outputs, refusals included; nothing raised
        assert isinstance(out, dict) and isinstance(out["success"], bool), name
        assert out["success"] or set(out) == {"success", "error"}, name


async def test_a_read_only_principal_gets_read_only_tools() -> None:
    ws = await _workspace()
    script = Script([TextPart("ok")])
    toolset = BastionToolset(Toolset(ws, permissions=["read", "list"]), id="docs")
    await Agent(FunctionModel(script), toolsets=[toolset]).run("go")
    names = {d.name for d in script.seen[0].function_tools}
    assert "read_file" in names and not names & {"write_file", "edit_file", "delete"}
    assert toolset.id == "docs"


def test_a_missing_pydantic_ai_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "bastion.agents.pydantic_ai")
    monkeypatch.setitem(sys.modules, "pydantic_ai.toolsets", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'bastion\[pydantic-ai\]'"):
        importlib.import_module("bastion.agents.pydantic_ai")
