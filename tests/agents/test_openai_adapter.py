"""OpenAI function calling: definitions that are valid JSON Schema in both API shapes, and a
dispatcher that validates, runs, and never lets the model's input raise."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.openai import OpenAITools
from bastion.agents.tools import ToolArgumentError, Toolset
from bastion.knowledge.engine import Knowledge


@pytest.fixture
def adapter() -> OpenAITools:
    mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
    ws = Workspace(mounts, policy=Policy.allow_all(), knowledge=Knowledge())
    return OpenAITools(Toolset(ws))


def test_chat_and_responses_definitions(adapter: OpenAITools) -> None:
    chat = adapter.definitions()
    responses = adapter.definitions("responses")
    assert [d["function"]["name"] for d in chat] == [d["name"] for d in responses]
    for item in chat:
        assert item["type"] == "function"
        assert set(item["function"]) == {"name", "description", "parameters"}
        jsonschema.Draft202012Validator.check_schema(item["function"]["parameters"])
    for item in responses:
        assert set(item) == {"type", "name", "description", "parameters"}


# (tool, arguments, valid by the schema, valid by the dispatcher). They agree except where the
# dispatcher is kinder than the schema: a value it can read without guessing ("yes" for a
# boolean, null for "use the default").
SAMPLES: list[tuple[str, dict[str, Any], bool, bool]] = [
    ("read_file", {"path": "/a"}, True, True),
    ("read_file", {"path": "/a", "offset": 3, "limit": 10}, True, True),
    ("read_file", {}, False, False),
    ("read_file", {"path": 3}, False, False),
    ("read_file", {"path": "/a", "offset": -1}, False, False),
    ("read_file", {"path": "/a", "limit": 0}, False, False),
    ("read_file", {"path": "/a", "extra": 1}, False, False),
    ("read_file", {"path": "/a", "limit": None}, False, True),
    ("grep", {"pattern": "x"}, True, True),
    ("grep", {"pattern": "x", "context": 21}, False, False),
    ("grep", {"pattern": "x", "glob": "*.md", "regex": True}, True, True),
    ("grep", {"pattern": "x", "ignore_case": "yes"}, False, True),
    ("grep", {"pattern": "x", "ignore_case": "perhaps"}, False, False),
    ("search", {"query": "q"}, True, True),
    ("search", {"query": ""}, False, False),
    ("search", {"query": "q", "mode": "bm25", "k": 50}, True, True),
    ("search", {"query": "q", "mode": "sparse"}, False, False),
    ("search", {"query": "q", "k": 101}, False, False),
    ("edit_file", {"path": "/a", "old_string": "x", "new_string": "y"}, True, True),
    ("edit_file", {"path": "/a", "old_string": "x"}, False, False),
    ("update", {"path": "/a", "operation": "append", "content": "x"}, True, True),
]


@pytest.mark.parametrize(("name", "arguments", "schema_ok", "model_ok"), SAMPLES)
def test_the_schema_and_the_dispatcher_agree_on_what_is_valid(
    name: str, arguments: dict[str, Any], schema_ok: bool, model_ok: bool
) -> None:
    ws = Workspace(
        [Mount.of("/w", MemoryStore())], policy=Policy.allow_all(), knowledge=Knowledge()
    )
    found = Toolset(ws).get(name) or Toolset(ws, style="intent").get(name)
    assert found is not None
    assert jsonschema.Draft202012Validator(found.schema()).is_valid(arguments) is schema_ok
    try:
        found.parse(arguments)
        parsed = True
    except ToolArgumentError:
        parsed = False
    assert parsed is model_ok


async def test_a_call_returns_compact_json(adapter: OpenAITools) -> None:
    raw = await adapter.call("write_file", json.dumps({"path": "/work/a.md", "content": "hé"}))
    assert raw == '{"success":true,"path":"/work/a.md","size":3,"created":true}'
    listed = json.loads(await adapter.call("list_files", ""))
    assert listed["success"] is True and "a.md (3 B)" in listed["tree"]


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("read_file", "{not json", "arguments of read_file are not valid JSON"),
        ("read_file", "[1, 2]", "arguments of read_file must be a JSON object"),
        ("read_file", '{"offset": 2}', "invalid arguments for read_file: path: Field required"),
        ("launch_rockets", "{}", "unknown tool 'launch_rockets'"),
        ("read_file", '{"path": "/docs/../../etc/passwd"}', "etc/passwd"),
        ("write_file", '{"path": "/docs/x", "content": "x"}', "read-only"),
    ],
)
async def test_nothing_the_model_sends_raises(
    adapter: OpenAITools, name: str, arguments: str, error: str
) -> None:
    out = json.loads(await adapter.call(name, arguments))
    assert out["success"] is False and error in out["error"]
    assert set(out) == {"success", "error"}


async def test_handling_tool_calls_as_dicts_and_as_client_objects(adapter: OpenAITools) -> None:
    as_dict = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "write_file", "arguments": '{"path":"/work/n.md","content":"x"}'},
    }
    message = await adapter.handle(as_dict)
    assert message["role"] == "tool" and message["tool_call_id"] == "call_1"
    assert json.loads(message["content"])["success"] is True
    as_object = SimpleNamespace(
        id="call_2",
        type="function",
        function=SimpleNamespace(name="read_file", arguments='{"path":"/work/n.md"}'),
    )
    read = await adapter.handle(as_object)
    assert json.loads(read["content"])["content"] == "     1\tx"
    item = {
        "type": "function_call",
        "call_id": "fc_3",
        "name": "stat",
        "arguments": '{"path":"/work/n.md"}',
    }
    output = await adapter.handle_responses(item)
    assert output["type"] == "function_call_output" and output["call_id"] == "fc_3"
    assert json.loads(output["output"])["kind"] == "file"


async def test_a_scripted_agent_loop(adapter: OpenAITools) -> None:
    """The calls a model makes, turn after turn; every answer is a JSON object the next turn
    can read, refusals included."""
    script = [
        ("write_file", {"path": "/work/plan.md", "content": "step one\nstep two\n"}),
        ("edit_file", {"path": "/work/plan.md", "old_string": "two", "new_string": "2"}),
        ("grep", {"pattern": "step"}),
        ("delete", {"path": "/docs"}),
        ("read_file", {"path": "/work/plan.md", "offset": 1}),
    ]
    answers = []
    for i, (name, args) in enumerate(script):
        call = {"id": f"c{i}", "function": {"name": name, "arguments": json.dumps(args)}}
        answers.append(json.loads((await adapter.handle(call))["content"]))
    assert [a["success"] for a in answers] == [True, True, True, False, True]
    assert answers[2]["total_found"] == 2
    assert answers[4]["content"] == "     2\tstep 2"
