"""LangChain's blocking paths (``tool.invoke``, ``agent.invoke``) through the blocking facade:
tool calls that LangGraph runs in threads share one tool session, whose per-path asyncio
locks hold across those threads, on a store whose calls really wait (SQLite works in worker
threads)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage

from bastion import Mount, Policy, Principal, Workspace
from bastion.agents.langchain import BastionMiddleware, langchain_tools
from bastion.agents.tools import Toolset
from bastion.stores.sqlite import SqliteStore

SLOTS = 8


class ScriptedChatModel(GenericFakeChatModel):
    """Answers from a script; takes the tools it is given without looking at them."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def _toolset(tmp_path: Path) -> Toolset:
    store = SqliteStore(tmp_path / "work.db")
    ws = Workspace(
        [Mount.of("/work", store)], policy=Policy.allow_all(), principal=Principal.of("agent")
    )
    return Toolset(ws)


def _tool(toolset: Toolset, name: str) -> Any:
    (found,) = [t for t in langchain_tools(toolset) if t.name == name]
    return found


def _call(tool: Any, args: dict[str, Any], n: int = 0) -> dict[str, Any]:
    message = tool.invoke({"type": "tool_call", "name": tool.name, "args": args, "id": f"c{n}"})
    assert isinstance(message, ToolMessage)
    out: dict[str, Any] = json.loads(str(message.content))
    return out


def test_edits_of_one_file_from_many_threads_all_land(tmp_path: Path) -> None:
    toolset = _toolset(tmp_path)
    write, read, edit = (_tool(toolset, n) for n in ("write_file", "read_file", "edit_file"))
    body = "".join(f"slot {i}: open\n" for i in range(SLOTS))
    assert _call(write, {"path": "/work/board.md", "content": body})["success"]
    assert _call(read, {"path": "/work/board.md"})["success"]

    def close_slot(i: int) -> dict[str, Any]:
        old, new = f"slot {i}: open", f"slot {i}: closed"
        args = {"path": "/work/board.md", "old_string": old, "new_string": new}
        return _call(edit, args, i)

    with ThreadPoolExecutor(SLOTS) as pool:
        outcomes = list(pool.map(close_slot, range(SLOTS)))
    assert [o["success"] for o in outcomes] == [True] * SLOTS, outcomes
    text = _call(read, {"path": "/work/board.md"})["content"]
    assert [line.split("\t", 1)[1] for line in text.splitlines()] == [
        f"slot {i}: closed" for i in range(SLOTS)
    ]


def test_a_blocking_agent_run_with_parallel_tool_calls(tmp_path: Path) -> None:
    toolset = _toolset(tmp_path)
    writes = [
        {
            "name": "write_file",
            "args": {"path": f"/work/{i}.md", "content": f"note {i}"},
            "id": f"w{i}",
        }
        for i in range(SLOTS)
    ]
    reads = [
        {"name": "read_file", "args": {"path": f"/work/{i}.md"}, "id": f"r{i}"}
        for i in range(SLOTS)
    ]
    script = iter(
        [
            AIMessage(content="", tool_calls=writes),
            AIMessage(content="", tool_calls=reads),
            AIMessage(content="done"),
        ]
    )
    model = ScriptedChatModel(messages=script)
    agent = create_agent(model, middleware=[BastionMiddleware(toolset)])
    state = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    outputs = [json.loads(str(m.content)) for m in results]
    assert [o["success"] for o in outputs] == [True] * (2 * SLOTS), outputs
    contents = [o["content"] for o in outputs[SLOTS:]]
    assert contents == [f"     1\tnote {i}" for i in range(SLOTS)]
