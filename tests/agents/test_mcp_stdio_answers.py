"""A ``tools/call`` answer of ``bastion mcp`` is written without building the JSON-RPC object
(issue 31): its bytes are still exactly those ``json.dumps`` gives for that object (compact,
not ASCII-only, lone surrogates escaped), whatever the request's id and the tool's output."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.mcp_stdio import StdioServer
from bastion.agents.tools import Toolset
from bastion.agents.tools.outputs import dumps
from bastion.agents.tools.spec import Tool

IDS: list[object] = [
    0,
    -1,
    7,
    2**64,
    1.5,
    -0.0,
    1e300,
    "",
    "x",
    "é",
    "漢字",
    'a"b\\c',
    "\u2028\x00\x1f\x7f",
    "\ud800",  # a lone surrogate: sent as \\ud800, answered escaped
    None,
]

CONTENTS = [
    "plain\n",
    'quotes " and \\ backslashes\n',
    "tabs\tand\rreturns\r\n",
    "controls \x01\x1b\x7f and \u2028 \u2029\n",
    "é 漢字 \U0001f600\n" * 3,
    "",
]


def _toolset() -> Toolset:
    ws = Workspace(
        [Mount.of("/notes", MemoryStore(), scope="read_write")],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    return Toolset(ws)


def _request(ident: object, name: str, arguments: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/call"}
    message["params"] = {"name": name, "arguments": arguments}
    return json.dumps(message).encode() + b"\n"


def _expected(ident: object, output: dict[str, Any]) -> bytes:
    """The answer as the server wrote it before (the whole object through ``json.dumps``)."""
    result = {"content": [{"type": "text", "text": dumps(output)}]}
    result["isError"] = not output.get("success", False)
    message = {"jsonrpc": "2.0", "id": ident, "result": result}
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace") + b"\n"


async def _serve(requests: bytes) -> list[bytes]:
    out = io.BytesIO()
    server = StdioServer(_toolset(), stdin=io.BytesIO(requests), stdout=out)
    await asyncio.wait_for(server.serve(), 30)
    return out.getvalue().splitlines(keepends=True)


async def test_answers_are_the_bytes_json_dumps_gives() -> None:
    calls: list[tuple[object, str, dict[str, Any]]] = []
    for n, content in enumerate(CONTENTS):
        path = f"/notes/f{n}.txt"
        calls.append((f"w{n}", "write_file", {"path": path, "content": content}))
    for ident in IDS:  # every id on a successful read and on a failed call
        calls.append((ident, "read_file", {"path": "/notes/f4.txt"}))
    requests = b"".join(_request(i, name, args) for i, name, args in calls)
    reads = b"".join(_request(f"r{n}", "read_file", {"path": f"/notes/f{n}.txt"}) for n in range(6))
    missing = _request("gone", "read_file", {"path": "/notes/none.txt"})
    unknown = _request(3, "no_such_tool", {})
    got = await _serve(requests + reads + missing + unknown)

    # the expected outputs, from the same tools in a fresh workspace with the same files
    toolset = _toolset()
    for _, name, args in calls[: len(CONTENTS)]:
        await toolset.call(name, args)
    page = await toolset.call("read_file", {"path": "/notes/f4.txt"})
    expected = {_expected(ident, page) for ident in IDS}
    for n in range(len(CONTENTS)):
        expected.add(
            _expected(f"r{n}", await toolset.call("read_file", {"path": f"/notes/f{n}.txt"}))
        )
    expected.add(_expected("gone", await toolset.call("read_file", {"path": "/notes/none.txt"})))
    expected.add(_expected(3, await toolset.call("no_such_tool", {})))
    written = {line for line in got if b'"w' in line[:30]}
    assert len(written) == len(CONTENTS)
    assert set(got) - written == expected
    assert b'"isError":true' in _expected("gone", await toolset.call("read_file", {"path": "/x"}))


class _Nothing(BaseModel):
    model_config = {"extra": "allow"}


OUTPUT: list[dict[str, Any]] = [{"success": True}]


async def _echo(session: Any, **_: Any) -> dict[str, Any]:
    return OUTPUT[0]


ECHO = Tool(name="echo", description="Answers what the test set.", args=_Nothing, fn=_echo)


@settings(max_examples=200, deadline=None)
@given(
    ident=st.none()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=()), max_size=20),
    text=st.text(st.characters(blacklist_categories=()), max_size=200),
    success=st.booleans(),
)
def test_any_id_and_output_answer_as_json_dumps(ident: object, text: str, success: bool) -> None:
    OUTPUT[0] = {"success": success, "content": text, "n": 1.5}
    request = _request(ident, "echo", {})
    out = io.BytesIO()
    ws = Workspace([Mount.of("/notes", MemoryStore())], policy=Policy.allow_all())
    server = StdioServer(Toolset(ws, extra=[ECHO]), stdin=io.BytesIO(request), stdout=out)
    asyncio.run(server.serve())
    assert out.getvalue() == _expected(json.loads(request)["id"], OUTPUT[0])
