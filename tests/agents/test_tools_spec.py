"""The tool definition record: schemas made from signatures, kept small, and argument checks
that answer in one line."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.tools import (
    EXECUTE_TOOLS,
    GRANULAR_TOOLS,
    INTENT_TOOLS,
    Output,
    ToolArgumentError,
    ToolSession,
    Toolset,
    ok,
    tool,
)
from bastion.agents.tools.spec import compact_schema
from bastion.knowledge.engine import Knowledge


def _walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    found += _walk(sub)
            else:
                found += _walk(value)
    elif isinstance(node, list):
        for item in node:
            found += _walk(item)
    return found


@pytest.mark.parametrize("t", [*GRANULAR_TOOLS, *INTENT_TOOLS], ids=lambda t: t.name)
def test_schemas_are_compact(t: Any) -> None:
    schema = t.schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    for node in _walk(schema):
        assert "title" not in node and "$defs" not in node and "$ref" not in node
        assert "anyOf" not in node
    for name, prop in schema["properties"].items():
        assert "type" in prop, name
        assert len(prop.get("description", "")) <= 60, name
    assert 20 <= len(t.description) <= 160


def test_the_tool_set_schemas_stay_within_their_budget() -> None:
    """Every token of a schema is paid on every request: the sizes are a budget (characters of
    compact JSON; about four characters make a token)."""
    sizes = {
        t.name: len(
            json.dumps(
                {"name": t.name, "description": t.description, "parameters": t.schema()},
                separators=(",", ":"),
            )
        )
        for t in (*GRANULAR_TOOLS, *INTENT_TOOLS)
    }
    assert max(sizes.values()) <= 1100, sizes
    assert sum(sizes[t.name] for t in GRANULAR_TOOLS) <= 5600, sizes
    assert sum(sizes[t.name] for t in INTENT_TOOLS) <= 2600, sizes
    for run in EXECUTE_TOOLS:  # added to either style for principals that may execute
        size = len(json.dumps({"description": run.description, "parameters": run.schema()}))
        assert size <= 1100, (run.name, size)


def test_the_granular_tool_set_as_a_model_sees_it() -> None:
    ws = Workspace(
        [Mount.of("/w", MemoryStore())], policy=Policy.allow_all(), knowledge=Knowledge()
    )
    seen = {s["name"]: sorted(s["parameters"].get("required", [])) for s in Toolset(ws).schemas()}
    assert seen == {
        "read_file": ["path"],
        "write_file": ["content", "path"],
        "edit_file": ["new_string", "old_string", "path"],
        "list_files": [],
        "glob": ["pattern"],
        "grep": ["pattern"],
        "stat": ["path"],
        "mkdir": ["path"],
        "delete": ["path"],
        "move": ["dst", "src"],
        "copy": ["dst", "src"],
        "search": ["query"],
        "ask": ["question"],
        "execute": ["command"],  # Policy.allow_all grants the operator action execute
        "process": ["action"],
    }


def test_optional_arguments_become_plain_types_and_defaults_stay() -> None:
    read = next(t for t in GRANULAR_TOOLS if t.name == "read_file").schema()["properties"]
    assert read["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5000,
        "description": "Most lines to return",
    }
    assert read["offset"]["default"] == 0


@tool
async def echo(
    s: ToolSession,
    text: Annotated[str, Field(description="What to echo")],
    times: Annotated[int, Field(ge=1, le=3)] = 1,
    how: Literal["plain", "loud"] = "plain",
) -> Output:
    """Echo text.

    The second paragraph is for people reading the code, not for the model."""
    return ok(text=text * times)


def test_a_function_becomes_a_tool() -> None:
    assert echo.name == "echo" and echo.description == "Echo text."
    assert echo.needs == frozenset() and echo.paths == () and echo.changes is False
    assert echo.schema()["properties"]["how"] == {
        "default": "plain",
        "enum": ["plain", "loud"],
        "type": "string",
    }
    assert echo.parse({"text": "a", "times": 2}) == {"text": "a", "times": 2, "how": "plain"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "text: Field required"),
        ({"text": "a", "times": 9}, "times: Input should be less than or equal to 3"),
        ({"text": "a", "how": "quiet"}, "how: Input should be 'plain' or 'loud'"),
        ({"text": "a", "colour": "red"}, "colour: unknown argument"),
    ],
)
def test_bad_arguments_are_one_line(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        echo.parse(arguments)
    text = str(caught.value)
    assert text.startswith("invalid arguments for echo: ") and message in text
    assert "\n" not in text and text.endswith("fix them and call again")


def test_restricting_an_enumerated_argument() -> None:
    loud = echo.restrict("how", ["loud"]) if echo.choices else None
    assert loud is None  # only arguments declared as choices can be restricted
    update = next(t for t in INTENT_TOOLS if t.name == "update")
    narrowed = update.restrict("operation", ["append", "delete"])
    schema = narrowed.schema()
    assert schema["properties"]["operation"]["enum"] == ["append", "delete"]
    assert "operation" in schema["required"]
    assert set(narrowed.choices["operation"]) == {"append", "delete"}
    with pytest.raises(ToolArgumentError):
        narrowed.parse({"path": "/a", "operation": "create"})
    access = next(t for t in INTENT_TOOLS if t.name == "access")
    exists_only = access.restrict("operation", ["exists"]).schema()["properties"]["operation"]
    assert exists_only == {"default": "exists", "const": "exists", "type": "string"}


def test_only_async_functions_with_good_names_become_tools() -> None:
    def sync(s: ToolSession) -> Output:
        return ok()

    with pytest.raises(TypeError):
        tool(sync)  # type: ignore[arg-type]

    async def fine(s: ToolSession) -> Output:
        return ok()

    with pytest.raises(ValueError):
        tool(name="no spaces allowed")(fine)


def test_compact_schema_inlines_definitions() -> None:
    from enum import Enum

    from pydantic import BaseModel

    class Colour(Enum):
        RED = "red"

    class Args(BaseModel):
        colour: Colour | None = None

    assert compact_schema(Args) == {
        "properties": {"colour": {"enum": ["red"], "type": "string"}},
        "type": "object",
    }
