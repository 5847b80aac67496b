"""LangChain / LangGraph: tools converted from the one definition, and a real agent loop
(``create_agent``) driven by a scripted chat model that calls them through the middleware."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from bastion import MemoryStore, Mount, Policy, Principal, Rule, VPath, Workspace
from bastion.agents.langchain import BastionMiddleware, langchain_tools
from bastion.agents.skills import SkillLibrary
from bastion.agents.tools import Approval, ApprovalRequest, Toolset
from bastion.core.errors import ConfigurationError

P = VPath.parse
SKILL = "---\nname: {name}\ndescription: {text}\n---\nSteps.\n"


class ScriptedChatModel(GenericFakeChatModel):
    """Answers from a script (tool calls, then text) and records what it was shown."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[list[Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound.append(list(tools))
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def calls(*steps: tuple[str, dict[str, Any]] | str) -> Iterator[AIMessage]:
    """One AI message per step: a tool call ``(name, args)``, or final text."""
    return iter(
        AIMessage(content=s)
        if isinstance(s, str)
        else AIMessage(content="", tool_calls=[{"name": s[0], "args": s[1], "id": f"c{n}"}])
        for n, s in enumerate(steps)
    )


def _workspace(docs: MemoryStore | None = None, skills: MemoryStore | None = None) -> Workspace:
    policy = Policy(rules=(Rule.deny("*", "/docs/hr/**"), Rule.allow("*", "/**")))
    mounts = [
        Mount.of("/docs", docs or MemoryStore(), "read_only"),
        Mount.of("/work", MemoryStore()),
        Mount.of("/skills", skills or MemoryStore(), "read_only"),
    ]
    return Workspace(mounts, policy=policy, principal=Principal.of("lc-agent"))


async def _seeded() -> Workspace:
    """Documents (one of them refused by the policy) and one skill, in read-only mounts."""
    docs, skills = MemoryStore(), MemoryStore()
    await docs.mkdir(P("/hr"))
    await docs.write(P("/guide.md"), b"# Guide\nAlways review.\n")
    await docs.write(P("/hr/pay.md"), b"secret bands\n")
    await skills.mkdir(P("/release-notes"))
    skill = SKILL.format(name="release-notes", text="Write release notes.")
    await skills.write(P("/release-notes/SKILL.md"), skill.encode())
    return _workspace(docs, skills)


def test_tools_are_the_tool_set_converted() -> None:
    toolset = Toolset(_workspace())
    tools = langchain_tools(toolset)
    assert [t.name for t in tools] == toolset.names
    for lc_tool, schema in zip(tools, toolset.schemas(), strict=True):
        converted = convert_to_openai_tool(lc_tool)["function"]
        assert converted == schema  # what a provider is sent: the one compact definition
    read_only = Toolset(_workspace(), permissions=["read", "list"])
    assert "write_file" not in {t.name for t in BastionMiddleware(read_only).tools}


async def test_a_scripted_agent_loop_through_the_middleware() -> None:
    ws = await _seeded()
    model = ScriptedChatModel(
        messages=calls(
            ("read_file", {"path": "/docs/guide.md"}),
            ("read_file", {"path": "/docs/hr/pay.md"}),
            ("write_file", {"path": "/docs/guide.md", "content": "x"}),
            ("write_file", {"path": "/work/plan.md", "content": "step one\n"}),
            ("edit_file", {"path": "/work/plan.md", "old_string": "one", "new_string": "1"}),
            ("read_file", {"path": "/work/plan.md", "limit": "not a number"}),
            "Done: /work/plan.md",
        )
    )
    middleware = BastionMiddleware(Toolset(ws), skills=SkillLibrary(ws, ["/skills"]))
    agent = create_agent(model, system_prompt="You are careful.", middleware=[middleware])

    state = await agent.ainvoke({"messages": [{"role": "user", "content": "plan it"}]})

    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    outputs = [json.loads(str(m.content)) for m in results]
    assert [m.status for m in results] == [
        "success",
        "error",
        "error",
        "success",
        "success",
        "error",
    ]
    assert outputs[0]["content"] == "     1\t# Guide\n     2\tAlways review."
    assert outputs[1] == {"success": False, "error": "/docs/hr/pay.md not found"}
    assert "read-only" in outputs[2]["error"]
    assert outputs[3]["created"] is True and results[3].artifact == outputs[3]
    assert outputs[5]["error"].startswith("invalid arguments for read_file: limit")
    assert await ws.read_text("/work/plan.md") == "step 1\n"
    assert state["messages"][-1].content == "Done: /work/plan.md"

    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert str(system.content).startswith("You are careful.\n\nFilesystem (absolute paths")
    assert "/work/  read-write (memory)" in str(system.content)
    assert '<skill name="release-notes">Write release notes.</skill>' in str(system.content)
    assert "/skills/<name>/SKILL.md" in str(system.content)
    assert all(p[0] == system for p in model.prompts)  # every model call, once each
    assert {t.name for t in model.bound[0]} == set(Toolset(ws).names)


async def test_approval_holds_inside_the_agent_loop() -> None:
    ws = _workspace()
    await ws.write("/work/keep.md", "keep\n")
    asked: list[str] = []

    def refuse(request: ApprovalRequest) -> bool:
        asked.append(f"{request.tool} {request.paths[0]}")
        return False

    toolset = Toolset(ws, approval=Approval(refuse, tools={"delete"}))
    model = ScriptedChatModel(messages=calls(("delete", {"path": "/work/keep.md"}), "ok"))
    agent = create_agent(model, middleware=[BastionMiddleware(toolset)])
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "clean up"}]})
    (result,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert result.status == "error" and "not approved" in str(result.content)
    assert asked == ["delete /work/keep.md"]
    assert await ws.read_text("/work/keep.md") == "keep\n"


def test_a_blocking_agent_run() -> None:
    ws = _workspace()
    model = ScriptedChatModel(
        messages=calls(
            ("write_file", {"path": "/work/a.md", "content": "hi"}),
            ("read_file", {"path": "/work/a.md"}),
            "ok",
        )
    )
    agent = create_agent(model, middleware=[BastionMiddleware(Toolset(ws))])
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [json.loads(str(m.content))["success"] for m in results] == [True, True]
    assert json.loads(str(results[1].content))["content"] == "     1\thi"
    first = model.prompts[0][0]
    assert isinstance(first, SystemMessage) and str(first.content).startswith("Filesystem")


async def test_a_skill_the_principal_may_not_read_never_reaches_the_prompt() -> None:
    policy = Policy(rules=(Rule.deny("*", "/skills/payroll/**"), Rule.allow("*", "/**")))
    store = MemoryStore()
    for name in ("payroll", "release-notes"):
        await store.mkdir(P(f"/{name}"))
        text = SKILL.format(name=name, text=f"The {name} skill.")
        await store.write(P(f"/{name}/SKILL.md"), text.encode())
    ws = Workspace([Mount.of("/skills", store, "read_only")], policy=policy)
    middleware = BastionMiddleware(Toolset(ws), skills=SkillLibrary(ws, ["/skills"]))
    text = await middleware.instructions()
    assert "release-notes" in text and "payroll" not in text
    no_skills = BastionMiddleware(Toolset(ws), skills=SkillLibrary(ws, ["/nowhere"]))
    assert await no_skills.instructions() == Toolset(ws).filesystem_map()


async def test_a_system_prompt_made_of_blocks_keeps_its_blocks() -> None:
    ws = _workspace()
    model = ScriptedChatModel(messages=calls("ok"))
    prompt = SystemMessage(content=[{"type": "text", "text": "Be brief."}])
    agent = create_agent(model, system_prompt=prompt, middleware=[BastionMiddleware(Toolset(ws))])
    await agent.ainvoke({"messages": [{"role": "user", "content": "hi"}]})
    blocks = model.prompts[0][0].content
    assert isinstance(blocks, list) and blocks[0] == {"type": "text", "text": "Be brief."}
    assert blocks[1]["text"].startswith("Filesystem")  # type: ignore[index]


async def test_a_tool_called_directly_never_raises() -> None:
    (read,) = [t for t in langchain_tools(Toolset(_workspace())) if t.name == "read_file"]
    call = {"type": "tool_call", "name": "read_file", "id": "x1", "args": {"path": 3}}
    message = await read.ainvoke(call)
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert json.loads(str(message.content))["error"].startswith("invalid arguments for read_file")
    missing = await read.ainvoke({"path": "/work/none.md"})
    assert json.loads(missing)["error"] == "/work/none.md not found"


def test_a_missing_langchain_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "bastion.agents.langchain")
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'bastion\[langchain\]'"):
        importlib.import_module("bastion.agents.langchain")
