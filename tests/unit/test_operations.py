"""Every operation is declared once (``bastion.workspace.operations``), and every front end
agrees with the declaration: the facade's defaults, the agent tools' arguments (and so the
MCP, OpenAI, LangChain and Pydantic AI schemas made from them), the HTTP endpoints and their
OpenAPI document, the CLI options. The tests enumerate the declarations and the front ends,
so a new operation, endpoint, tool or option is checked by construction."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import click
import pytest
from mcp import Client

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.mcp import mcp_server
from bastion.agents.tools import EXECUTE_TOOLS, GRANULAR_TOOLS, INTENT_TOOLS, Tool, Toolset
from bastion.agents.tools.spec import compact_schema
from bastion.cli import main
from bastion.cli.declared import DeclaredOption
from bastion.knowledge.engine import Knowledge
from bastion.server.errors import status_for
from bastion.server.handlers import Endpoint
from bastion.server.openapi import all_endpoints, openapi_document
from bastion.workspace.operations import OPERATIONS, Operation, operation

SRC = Path(__file__).resolve().parents[2] / "src" / "bastion"
OPS = list(OPERATIONS.values())
ENDPOINTS = all_endpoints()
TOOLS: tuple[Tool, ...] = (*GRANULAR_TOOLS, *INTENT_TOOLS, *EXECUTE_TOOLS)


def _field_schema(op: Operation, name: str) -> dict[str, Any]:
    """The declared parameter's compact JSON schema, less its description and default."""
    prop = compact_schema(op.params)["properties"][name]
    return {k: v for k, v in prop.items() if k not in ("description", "default")}


def _source(where: str) -> tuple[Operation, str]:
    op, _, name = where.partition(".")
    return operation(op), name


# -- the declarations themselves ---------------------------------------------------------------


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_each_operation_is_complete(op: Operation) -> None:
    assert op.summary and "\n" not in op.summary
    assert op.params.model_config.get("extra") == "forbid"
    assert op.result.model_config.get("extra") == "forbid"
    for name, info in op.fields.items():
        assert info.description, f"{op.name}.{name} has no description"
        assert len(info.description) <= 60, f"{op.name}.{name}: a tool pays for every character"
    assert op.edge_only <= set(op.fields)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_each_operation_has_a_front_end(op: Operation) -> None:
    served = {e.operation.name for e in ENDPOINTS}
    assert op.facade or op.name in served, f"{op.name}: no facade method and no endpoint"


# -- the Python facade -------------------------------------------------------------------------


@pytest.mark.parametrize("op", [op for op in OPS if op.facade], ids=lambda op: op.name)
def test_the_facade_defaults_are_the_declared_ones(op: Operation) -> None:
    taken: set[str] = set()
    for method in op.facade:
        signature = inspect.signature(getattr(Workspace, method))
        for name, param in signature.parameters.items():
            if name not in op.fields:
                continue
            taken.add(name)
            info = op.fields[name]
            if info.is_required():
                assert param.default is inspect.Parameter.empty, f"{method}({name})"
            else:
                assert param.default == info.default, (method, name, param.default)
    missing = set(op.fields) - op.edge_only - taken
    assert not missing, f"{op.name} declares {sorted(missing)}, which no facade method takes"


def test_the_default_search_mode_is_chosen_in_one_function() -> None:
    """``search_mode`` (bastion.workspace.modes) is the one place; every front end passes
    ``None``. A second ``"hybrid" if ...`` anywhere would be a second choice."""
    choices = [
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if re.search(r"""["']hybrid["']\s+if\b""", path.read_text(encoding="utf-8"))
    ]
    assert choices == ["workspace/modes.py"]
    for method in ("search", "ask"):
        assert inspect.signature(getattr(Workspace, method)).parameters["mode"].default is None


# -- agent tools and the MCP schemas made from them --------------------------------------------


@pytest.mark.parametrize("t", TOOLS, ids=lambda t: t.name)
def test_each_derived_tool_argument_is_the_declared_parameter(t: Tool) -> None:
    schema = t.schema()["properties"]
    fields = t.args.model_fields
    for arg, where in t.derived.items():
        op, name = _source(where)
        mine = {k: v for k, v in schema[arg].items() if k not in ("description", "default")}
        assert mine == _field_schema(op, name), (t.name, arg)
        declared = op.fields[name]
        if arg in t.presets:
            t.args.model_validate({**_required(t), arg: fields[arg].default})  # within bounds
        elif declared.is_required():
            assert fields[arg].is_required(), (t.name, arg)
        else:
            assert fields[arg].default == declared.default, (t.name, arg)


def _required(t: Tool) -> dict[str, Any]:
    samples = {"path": "/a", "src": "/a", "dst": "/b", "content": "x", "pattern": "x"}
    samples |= {"old_string": "a", "new_string": "b", "query": "q", "question": "q"}
    samples |= {"command": "true", "operation": "read", "action": "list"}
    return {n: samples[n] for n, f in t.args.model_fields.items() if f.is_required()}


@pytest.mark.parametrize("t", GRANULAR_TOOLS, ids=lambda t: t.name)
def test_every_granular_tool_argument_is_derived(t: Tool) -> None:
    """A granular tool is one operation: each of its arguments is a declared parameter."""
    assert set(t.args.model_fields) == set(t.derived), t.name


NOT_DERIVED = {
    ("discover", "query"): "optional here: list takes none, the searches need one",
    ("update", "content"): "optional here: delete takes none",
    ("execute", "command"): "the tool's own checks (words, length, NUL) before any approval",
    ("execute", "timeout"): "one argument for run and start_process: checked below",
}
"""Arguments named like a parameter of the tool's operations that are the tool's own."""


@pytest.mark.parametrize("t", (*INTENT_TOOLS, *EXECUTE_TOOLS), ids=lambda t: t.name)
def test_every_argument_named_like_its_operations_parameters_is_derived(t: Tool) -> None:
    ops = {_source(where)[0] for where in t.derived.values()}
    for arg in t.args.model_fields:
        if any(arg in op.fields for op in ops) and (t.name, arg) not in NOT_DERIVED:
            assert arg in t.derived, f"{t.name}.{arg} is declared by {sorted(o.name for o in ops)}"


def test_the_execute_timeout_is_bounded_by_the_declarations() -> None:
    from bastion.agents.tools.execute import (
        BACKGROUND_TIMEOUT,
        FOREGROUND_TIMEOUT,
        MAX_BACKGROUND_TIMEOUT,
        MAX_TIMEOUT,
    )

    run, start = operation("run"), operation("start_process")
    assert (run.default("timeout"), run.bounds("timeout")[1]) == (FOREGROUND_TIMEOUT, MAX_TIMEOUT)
    assert (
        start.default("timeout"),
        start.bounds("timeout")[1],
    ) == (BACKGROUND_TIMEOUT, MAX_BACKGROUND_TIMEOUT)
    execute = next(t for t in EXECUTE_TOOLS if t.name == "execute")
    assert execute.schema()["properties"]["timeout"]["maximum"] == MAX_BACKGROUND_TIMEOUT


async def test_mcp_lists_the_tool_schemas_the_declarations_made() -> None:
    ws = Workspace(
        [Mount.of("/w", MemoryStore())], policy=Policy.allow_all(), knowledge=Knowledge()
    )
    tools = Toolset(ws)
    async with Client(mcp_server(tools)) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    assert set(listed) == set(tools.names)
    for t in tools.tools:
        assert listed[t.name] == t.schema()
        for arg, where in t.derived.items():
            op, name = _source(where)
            shown = {k: v for k, v in listed[t.name]["properties"][arg].items()}
            assert {k: v for k, v in shown.items() if k not in ("description", "default")} == (
                _field_schema(op, name)
            )


# -- HTTP endpoints and the OpenAPI document ---------------------------------------------------


@pytest.mark.parametrize("e", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_each_endpoint_takes_its_operations_parameters(e: Endpoint) -> None:
    op = e.operation
    assert set(e.model.model_fields) <= set(op.fields)
    left_out = set(op.fields) - set(e.model.model_fields)
    assert e.method == "GET" or not left_out, "a body takes every declared parameter"
    for name in left_out:  # only what a query string cannot carry
        assert _field_schema(op, name).get("type") == "object", (e.path, name)
    for name in e.model.model_fields:
        assert (
            compact_schema(e.model)["properties"][name]
            == compact_schema(op.params)["properties"][name]
        )


def test_the_openapi_document_is_the_endpoints() -> None:
    doc = openapi_document()
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert documented == {(e.path, e.method.lower()) for e in ENDPOINTS}


@pytest.mark.parametrize("e", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_each_documented_operation_is_generated_from_its_declaration(e: Endpoint) -> None:
    doc = openapi_document()
    entry = doc["paths"][e.path][e.method.lower()]
    assert entry["summary"] == e.operation.summary
    declared = e.model.model_json_schema(ref_template="#/components/schemas/{model}")
    if e.source == "query":
        params = {p["name"]: p for p in entry.get("parameters", [])}
        assert set(params) == set(e.model.model_fields)
        for name, p in params.items():
            prop = declared["properties"][name]
            assert p["schema"] == {k: v for k, v in prop.items() if k != "description"}
            assert p["required"] == (name in declared.get("required", []))
    elif e.source == "body":
        body = entry["requestBody"]["content"]["application/json"]["schema"]
        assert body == {k: v for k, v in declared.items() if k != "$defs"}
        assert body["additionalProperties"] is False
    answer = entry["responses"][str(e.status)]["content"]["application/json"]["schema"]
    assert answer["title"] == e.operation.result.__name__
    for error in e.operation.errors:
        assert str(status_for(error)) in entry["responses"], (e.path, error.__name__)
    assert "400" in entry["responses"]


# -- the command line --------------------------------------------------------------------------

COMMANDS = {
    "ls": "list",
    "tree": "list",
    "glob": "glob",
    "grep": "grep",
    "put": "write",
    "rm": "delete",
    "mv": "move",
    "cp": "copy",
    "search": "search",
    "ask": "ask",
}
"""Each command that is one declared operation."""


def _commands() -> dict[str, click.Command]:
    assert isinstance(main, click.Group)
    return dict(main.commands)


def _declared_options() -> list[tuple[str, DeclaredOption]]:
    found = []
    for name, command in _commands().items():
        for param in command.params:
            if isinstance(param, DeclaredOption):
                found.append((name, param))
    return found


def test_the_cli_has_declared_options() -> None:
    commands = {name for name, _ in _declared_options()}
    assert set(COMMANDS) - {"ls"} <= commands


@pytest.mark.parametrize(
    ("command", "option"), _declared_options(), ids=lambda x: getattr(x, "name", x)
)
def test_each_declared_cli_option_is_its_parameter(command: str, option: DeclaredOption) -> None:
    op, name = _source(option.source)
    info = op.fields[name]
    assert option.default == (None if info.is_required() else info.default), option.source
    low, high = op.bounds(name)
    kind = option.type
    if isinstance(kind, click.IntRange):
        assert (kind.min, kind.max) == (low, high), option.source
    elif isinstance(kind, click.Choice):
        assert tuple(kind.choices) == tuple(_field_schema(op, name)["enum"]), option.source
    else:
        assert (low, high) == (None, None), f"{option.source}: bounds the option does not hold"


@pytest.mark.parametrize(("command", "op_name"), COMMANDS.items())
def test_an_option_named_like_a_declared_parameter_is_derived(command: str, op_name: str) -> None:
    op = operation(op_name)
    for param in _commands()[command].params:
        if isinstance(param, click.Option) and param.name in op.fields:
            assert isinstance(param, DeclaredOption), f"bastion {command} --{param.name}"
