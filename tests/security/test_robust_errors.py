"""Hostile input gets an error of the library's own, never a Python exception from inside it.

Three classes, each with its variants:

* tool calls: ``OpenAITools.call`` (and the MCP, LangChain and Pydantic AI adapters, which share
  ``Toolset.call``) answer numbers of thousands of digits, nesting too deep to parse, arguments
  of the wrong shape and text that is not text with a one-line tool error;
* paths: a lone surrogate (``"\\ud800"``, half a UTF-16 pair: not text) anywhere a path or a
  glob pattern enters is an :class:`InvalidPathError` / :class:`InvalidPatternError`;
* tokens: ``exp``, ``nbf`` or ``iat`` of ``10**400``, infinity, NaN or a string, and claims
  holding a lone surrogate, are an :class:`AuthenticationError`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from langchain_core.messages import ToolMessage
from mcp import Client

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.langchain import langchain_tools
from bastion.agents.mcp import mcp_server
from bastion.agents.openai import OpenAITools
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.tools import Approval, Toolset
from bastion.core.audit_sinks import JsonLinesAuditSink
from bastion.core.errors import ConfigurationError, InvalidPathError, InvalidPatternError
from bastion.core.globs import Glob
from bastion.core.paths import VPath
from bastion.governance.errors import AuthenticationError
from bastion.governance.identity import IdentityConfig, JwtVerifier, VerificationKey

DEEP = 100_000
"""Nesting depth far past what any recursive parser or validator allows."""


def _deep_json(kind: str) -> str:
    if kind == "array":
        return "[" * DEEP + "]" * DEEP
    return '{"a":' * DEEP + "1" + "}" * DEEP


def _deep_dict() -> dict[str, Any]:
    value: Any = 1
    for _ in range(DEEP):
        value = {"a": value}
    return {"path": value}


async def _workspace() -> Workspace:
    ws = Workspace([Mount.of("/work", MemoryStore())], policy=Policy.allow_all())
    await ws.write("/work/a.md", "alpha\nbeta\n")
    return ws


def _is_tool_error(output: dict[str, Any], *, unexpected_ok: bool = False) -> str:
    """The one-line error of a failed output; a crash inside a tool would be "failed
    unexpectedly", which these inputs must not reach."""
    assert output["success"] is False, output
    error = output["error"]
    assert isinstance(error, str) and "\n" not in error
    if not unexpected_ok:
        assert "unexpectedly" not in error, error
    return error


# -- tool calls ------------------------------------------------------------------------------

HOSTILE_ARGUMENTS = {
    "5000-digit integer": '{"path": "/work/a.md", "offset": ' + "9" * 5000 + "}",
    "5000-digit negative integer": '{"path": "/work/a.md", "offset": -' + "9" * 5000 + "}",
    "5000-digit integer as a key's value deep inside": '{"path": ["'
    + "x"
    + '", '
    + "1" * 5000
    + "]}",
    "deeply nested array": _deep_json("array"),
    "deeply nested object": _deep_json("object"),
    "deeply nested value": '{"path": ' + _deep_json("object") + "}",
    "number too large for a float": '{"path": "/work/a.md", "offset": 1e999}',
    "NaN": '{"path": "/work/a.md", "offset": NaN}',
    "Infinity": '{"path": "/work/a.md", "limit": Infinity}',
    "a list": '["/work/a.md"]',
    "a number": "42",
    "a string": '"/work/a.md"',
    "null": "null",
    "truncated JSON": '{"path": "/work/a.md"',
    "a lone surrogate in the path": '{"path": "/work/\\ud800.md"}',
    "a lone low surrogate in the path": '{"path": "/work/a\\udcff"}',
    "an integer past 64 bits": '{"path": "/work/a.md", "offset": ' + str(2**64) + "}",
}


@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
async def test_openai_call_never_raises_on_hostile_arguments(arguments: str) -> None:
    adapter = OpenAITools(Toolset(await _workspace()))
    for sent in (arguments, arguments.encode("utf-8")):
        text = await adapter.call("read_file", sent)
        text.encode("utf-8")  # always sendable
        _is_tool_error(json.loads(text))


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", b"\xff\xfe{}"),  # not UTF-8
        ("read_file", 42),
        ("read_file", ["path", "/work/a.md"]),
        ("read_file", {1: "/work/a.md"}),
        ("read_file", object()),
        (None, "{}"),
        (42, "{}"),
        ("\ud800", "{}"),
        ("read_file\n" * 1000, "{}"),
    ],
)
async def test_openai_call_never_raises_on_odd_names_and_argument_types(
    name: Any, arguments: Any
) -> None:
    text = await OpenAITools(Toolset(await _workspace())).call(name, arguments)
    text.encode("utf-8")
    error = _is_tool_error(json.loads(text))
    assert len(error) <= 400


async def test_openai_handle_reads_odd_tool_calls_without_raising() -> None:
    adapter = OpenAITools(Toolset(await _workspace()))
    message = await adapter.handle(
        {"id": "c1", "function": {"name": "read_file", "arguments": _deep_json("array")}}
    )
    assert message["role"] == "tool" and message["tool_call_id"] == "c1"
    assert "nested too deeply" in _is_tool_error(json.loads(message["content"]))
    item = await adapter.handle_responses({"call_id": "c2", "name": "read_file"})
    assert json.loads(item["output"])["success"] is False  # no arguments: path is required
    assert (await adapter.handle({"id": "c3"}))["content"].startswith('{"success":false')


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "/work/a.md", "offset": 10**5000},
        {"path": "/work/a.md", "offset": -(10**5000)},
        {"path": "/work/a.md", "offset": 2**63},
        {"path": "/work/a.md", "limit": float("nan")},
        {"path": "/work/a.md", "offset": float("inf")},
        {"path": "/work/\ud800"},
        {"\ud800": 1, "path": "/work/a.md"},
        _deep_dict(),
    ],
    ids=["huge int", "huge negative", "2**63", "nan", "inf", "surrogate", "surrogate key", "deep"],
)
async def test_toolset_call_answers_hostile_values_as_argument_errors(
    arguments: dict[str, Any],
) -> None:
    toolset = Toolset(await _workspace())
    for style in ("read_file",):
        error = _is_tool_error(await toolset.call(style, arguments))
        assert "read_file" in error or "surrogate" in error


async def test_mcp_server_answers_hostile_arguments_with_an_error_result() -> None:
    toolset = Toolset(await _workspace())
    async with Client(mcp_server(toolset)) as client:
        for arguments in (
            {"path": "/work/a.md", "offset": 10**5000},
            {"path": "/work/\ud800"},
            {"path": "/work/a.md", "offset": 2**70},
        ):
            result = await client.call_tool("read_file", arguments)
            assert result.is_error is True
            text = result.content[0].text  # type: ignore[union-attr]
            _is_tool_error(json.loads(text))
        fine = await client.call_tool("read_file", {"path": "/work/a.md"})
        assert fine.is_error is False


async def test_langchain_tool_answers_hostile_arguments_with_an_error_message() -> None:
    """What a chat model's JSON can hold: LangChain itself writes the arguments out as text
    before the tool runs, so a number past Python's 4,300-digit conversion limit never gets
    this far (the model integration's JSON parser refuses it first)."""
    (read,) = [t for t in langchain_tools(Toolset(await _workspace())) if t.name == "read_file"]
    nested: Any = 1
    for _ in range(500):
        nested = [nested]
    for n, args in enumerate(
        (
            {"path": "/work/a.md", "offset": 10**4000},
            {"path": "/work/\ud800"},
            {"path": nested},
        )
    ):
        call = {"type": "tool_call", "name": "read_file", "id": f"x{n}", "args": args}
        message = await read.ainvoke(call)
        assert isinstance(message, ToolMessage) and message.status == "error"
        _is_tool_error(json.loads(str(message.content)))


async def test_pydantic_ai_toolset_answers_hostile_arguments_with_an_output() -> None:
    bastion_tools = BastionToolset(Toolset(await _workspace()))
    tools = await bastion_tools.get_tools(None)  # type: ignore[arg-type]
    for args in (
        {"path": "/work/a.md", "offset": 10**5000},
        {"path": "/work/\ud800"},
        _deep_dict(),
    ):
        output = await bastion_tools.call_tool(
            "read_file",
            args,
            None,  # type: ignore[arg-type]
            tools["read_file"],
        )
        _is_tool_error(output)


async def test_a_tool_output_that_holds_a_lone_surrogate_is_still_sendable() -> None:
    from bastion.agents.tools.outputs import dumps, fail

    text = dumps(fail("name \ud800 here"))
    text.encode("utf-8")
    assert json.loads(text)["error"] == "name \ud800 here"


# -- paths -----------------------------------------------------------------------------------

SURROGATE_PATHS = [
    "\ud800",
    "/\ud800",
    "/work/\ud800",
    "/work/a\udfff.md",
    "/work/\udcff/a.md",
    "work/\ud800b",
    "/work/" + "é" * 10 + "\ud834",  # a non-ASCII path: the general parser
    "/work/\ud83d\ude00",  # a pair written as two code points is still two lone halves
]


@pytest.mark.parametrize("raw", SURROGATE_PATHS)
def test_a_lone_surrogate_in_a_path_is_an_invalid_path(raw: str) -> None:
    with pytest.raises(InvalidPathError) as caught:
        VPath.parse(raw)
    message = str(caught.value)
    assert "surrogate" in message and "\n" not in message
    message.encode("utf-8")  # the message quotes the path escaped, so it is text
    (name,) = [s for s in raw.split("/") if any(0xD800 <= ord(c) <= 0xDFFF for c in s)]
    with pytest.raises(InvalidPathError):
        VPath.ROOT.child(name)


def test_a_real_non_bmp_character_is_still_a_name() -> None:
    assert VPath.parse("/work/\U0001f600.md").name == "\U0001f600.md"


@pytest.mark.parametrize("pattern", ["\ud800", "/work/*\udcff", "**/\ud800*.md", "[\ud800]"])
def test_a_lone_surrogate_in_a_glob_is_an_invalid_pattern(pattern: str) -> None:
    with pytest.raises(InvalidPatternError):
        Glob.compile(pattern)


def test_a_lone_surrogate_in_a_mount_prefix_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Mount.of("/\ud800", MemoryStore())


def test_a_lone_surrogate_in_an_approval_path_is_refused() -> None:
    with pytest.raises(InvalidPatternError):
        Approval(lambda request: True, paths=("/work/\ud800/**",))


WORKSPACE_CALLS: dict[str, Callable[[Workspace], Any]] = {
    "read_text": lambda ws: ws.read_text("/work/\ud800"),
    "read_bytes": lambda ws: ws.read_bytes("/work/a\udcff.md"),
    "stat": lambda ws: ws.stat("/\ud800"),
    "exists": lambda ws: ws.exists("/work/\ud800"),
    "write": lambda ws: ws.write("/work/\ud800.md", "x"),
    "append": lambda ws: ws.append("/work/\ud800.md", "x"),
    "edit": lambda ws: ws.edit("/work/\ud800.md", "a", "b"),
    "mkdir": lambda ws: ws.mkdir("/work/\ud800"),
    "delete": lambda ws: ws.delete("/work/\ud800"),
    "list": lambda ws: ws.list("/work/\ud800"),
    "glob path": lambda ws: ws.glob("*", path="/work/\ud800"),
    "grep path": lambda ws: ws.grep("alpha", "/work/\ud800"),
    "copy source": lambda ws: ws.copy("/work/\ud800", "/work/b.md"),
    "copy target": lambda ws: ws.copy("/work/a.md", "/work/\ud800"),
    "move source": lambda ws: ws.move("/work/\ud800", "/work/b.md"),
    "move target": lambda ws: ws.move("/work/a.md", "/work/\udfff"),
}


@pytest.mark.parametrize("call", WORKSPACE_CALLS.values(), ids=WORKSPACE_CALLS.keys())
async def test_every_workspace_path_argument_refuses_a_lone_surrogate(
    call: Callable[[Workspace], Any],
) -> None:
    ws = await _workspace()
    with pytest.raises(InvalidPathError):
        await call(ws)
    assert await ws.read_text("/work/a.md") == "alpha\nbeta\n"


@pytest.mark.parametrize(
    "call",
    [
        lambda ws: ws.glob("/work/\ud800*"),
        lambda ws: ws.glob("\udcff/**"),
        lambda ws: ws.grep("alpha", "/work", glob="*\ud800"),
    ],
    ids=["glob absolute", "glob relative", "grep glob"],
)
async def test_every_glob_argument_refuses_a_lone_surrogate(
    call: Callable[[Workspace], Any],
) -> None:
    with pytest.raises(InvalidPatternError):
        await call(await _workspace())


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "/work/\ud800"}),
        ("write_file", {"path": "/work/\ud800", "content": "x"}),
        ("glob", {"pattern": "**/\ud800"}),
        ("grep", {"pattern": "alpha", "path": "/work/\ud800"}),
        ("grep", {"pattern": "alpha", "glob": "\ud800*"}),
        ("copy", {"src": "/work/a.md", "dst": "/work/\ud800"}),
        ("move", {"src": "/work/\ud800", "dst": "/work/b.md"}),
        ("delete", {"path": "/work/\ud800", "recursive": True}),
    ],
)
async def test_tools_answer_a_surrogate_path_with_a_sendable_one_line_error(
    tool: str, arguments: dict[str, Any]
) -> None:
    toolset = Toolset(await _workspace(), approval=Approval(lambda r: True, paths=("/**",)))
    output = await toolset.call(tool, arguments)
    error = _is_tool_error(output)
    assert "surrogate" in error
    json.dumps(output, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("write_file", {"path": "/work/b.md", "content": "half \ud800 a character"}),
        ("edit_file", {"path": "/work/a.md", "old_string": "alpha", "new_string": "\udfff"}),
        ("grep", {"pattern": "\ud800", "regex": True}),
        ("grep", {"pattern": "a\udcffb"}),
    ],
)
async def test_tools_answer_text_that_is_not_text_as_an_argument_error(
    tool: str, arguments: dict[str, Any]
) -> None:
    ws = await _workspace()
    toolset = Toolset(ws)
    await toolset.call("read_file", {"path": "/work/a.md"})
    error = _is_tool_error(await toolset.call(tool, arguments))
    assert error.startswith(f"invalid arguments for {tool}") and "lone surrogate" in error
    assert await ws.read_text("/work/a.md") == "alpha\nbeta\n"
    assert not await ws.exists("/work/b.md")


def test_the_json_lines_audit_log_takes_a_principal_id_that_is_not_text(tmp_path: Path) -> None:
    sink = JsonLinesAuditSink(tmp_path / "audit.jsonl")
    ws = Workspace(
        [Mount.of("/work", MemoryStore())],
        policy=Policy.allow_all(),
        principal=Principal.of("agent-\ud800"),
        audit=sink,
    ).sync()
    ws.write("/work/a.md", "x")
    sink.close()
    (line,) = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    # kept as its escape (bastion.core.audit.exportable): every reader can export it
    assert json.loads(line)["principal"] == "agent-\\ud800"


# -- tokens ----------------------------------------------------------------------------------

SECRET = b"robust-errors-test-secret-0123456789"
NOW = 1_800_000_000


@pytest.fixture
def verifier() -> JwtVerifier:
    config = IdentityConfig(
        issuer="https://id.test", audience="bastion", keys=(VerificationKey.hmac(SECRET),)
    )
    return JwtVerifier(config, clock=lambda: NOW)


def _claims(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": "https://id.test",
        "aud": "bastion",
        "sub": "alice",
        "tenant": "acme",
        "roles": ["staff"],
        "exp": NOW + 60,
    }
    base.update(extra)
    return base


def _signed_text(payload: str) -> str:
    """A token whose payload is exactly ``payload`` (JSON that PyJWT would not write)."""

    def b64(raw: bytes) -> bytes:
        return base64.urlsafe_b64encode(raw).rstrip(b"=")

    head = b64(b'{"alg":"HS256","typ":"JWT"}') + b"." + b64(payload.encode())
    return (head + b"." + b64(hmac.new(SECRET, head, hashlib.sha256).digest())).decode()


def _refused(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(AuthenticationError) as caught:
        verifier.verify(token)
    message = str(caught.value)
    assert "\n" not in message and "alice" not in message
    return message


def test_a_valid_token_still_passes(verifier: JwtVerifier) -> None:
    assert verifier.verify(jwt.encode(_claims(), SECRET, algorithm="HS256")).id == "alice"


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), 10**4000, "1900000000", "soon", [NOW], {"t": NOW}, None, True],
    ids=[
        "10**400",
        "-10**400",
        "10**4000",
        "numeric string",
        "word",
        "list",
        "object",
        "null",
        "bool",
    ],
)
def test_a_time_claim_of_any_hostile_value_is_an_authentication_error(
    verifier: JwtVerifier, claim: str, value: Any
) -> None:
    claims = _claims(**{claim: value})
    if value is None:
        claims[claim] = None
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    if value is None and claim != "exp":
        verifier.verify(token)  # a null nbf / iat is an absent one
        return
    _refused(verifier, token)


@pytest.mark.parametrize(
    "value",
    ["1e400", "-1e400", "NaN", "Infinity", "-Infinity", "9" * 5000, "1" + "0" * 400 + ".5"],
)
@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
def test_a_time_claim_written_past_the_float_range_is_an_authentication_error(
    verifier: JwtVerifier, claim: str, value: str
) -> None:
    fields = {k: v for k, v in _claims().items() if k != claim}
    body = json.dumps(fields)[:-1] + f', "{claim}": {value}}}'
    _refused(verifier, _signed_text(body))


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "\ud800"},
        {"tenant": "acme\udcff"},
        {"roles": ["staff", "\ud800"]},
        {"extra": {"deep": ["\udfff"]}},
        {"\ud800": 1},
    ],
    ids=["sub", "tenant", "role", "nested", "key"],
)
def test_a_claim_holding_a_lone_surrogate_is_an_authentication_error(
    verifier: JwtVerifier, claims: dict[str, Any]
) -> None:
    _refused(verifier, jwt.encode(_claims(**claims), SECRET, algorithm="HS256"))


def test_a_deeply_nested_claim_is_an_authentication_error(verifier: JwtVerifier) -> None:
    body = json.dumps(_claims())[:-1] + ', "x": ' + "[" * 3000 + "]" * 3000 + "}"
    config = IdentityConfig(
        issuer="https://id.test",
        audience="bastion",
        keys=(VerificationKey.hmac(SECRET),),
        max_token_bytes=64 * 1024,
    )
    _refused(JwtVerifier(config, clock=lambda: NOW), _signed_text(body))
