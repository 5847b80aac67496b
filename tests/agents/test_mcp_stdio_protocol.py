"""MCP over stdio without the SDK (``bastion.agents.mcp_stdio``): the SDK server's tool list
and answers, JSON-RPC errors for what is not a request, a client that probes the stateless
protocol first falling back to the handshake, cancellation, and a line too long to read."""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from mcp import Client
from pydantic import BaseModel

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.mcp import mcp_server
from bastion.agents.mcp_stdio import PROTOCOL_VERSIONS, StdioServer
from bastion.agents.tools import Toolset
from bastion.agents.tools.spec import Tool


class _Nothing(BaseModel):
    pass


async def _slow(session: Any) -> dict[str, Any]:
    await asyncio.sleep(60)
    return {"success": True}


SLOW = Tool(name="slow", description="Waits a minute.", args=_Nothing, fn=_slow)


def _toolset(extra: Iterable[Tool] = ()) -> Toolset:
    store = MemoryStore()
    ws = Workspace(
        [Mount.of("/notes", store, description="notes")],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    return Toolset(ws, extra=extra)


class Wire:
    """A :class:`StdioServer` on two pipes: send lines, read answers."""

    def __init__(self, server_in: io.BufferedReader, to_server: io.BufferedWriter) -> None:
        self._to = to_server
        self.answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._in = server_in

    def send(self, message: object) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self._to.write(raw + b"\n")
        self._to.flush()

    async def answer(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.answers.get(), 30)

    def close(self) -> None:
        self._to.close()


@pytest.fixture
async def wire() -> AsyncIterator[Wire]:
    async with _served(_toolset([SLOW])) as w:
        yield w


class _served:
    def __init__(self, toolset: Toolset, **options: Any) -> None:
        self.toolset, self.options = toolset, options

    async def __aenter__(self) -> Wire:
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.files = [os.fdopen(r1, "rb"), os.fdopen(w1, "wb"), os.fdopen(r2, "rb")]
        self.out = os.fdopen(w2, "wb")
        server = StdioServer(self.toolset, stdin=self.files[0], stdout=self.out, **self.options)
        self.wire = Wire(self.files[0], self.files[1])
        self.task = asyncio.create_task(server.serve())
        self.reader = asyncio.create_task(self._read(self.files[2]))
        return self.wire

    async def _read(self, pipe: io.BufferedReader) -> None:
        while line := await asyncio.to_thread(pipe.readline):
            await self.wire.answers.put(json.loads(line))

    async def __aexit__(self, *exc: object) -> None:
        if not self.files[1].closed:
            self.wire.close()
        await asyncio.wait_for(self.task, 30)
        self.out.close()
        await asyncio.wait_for(self.reader, 30)
        for f in (self.files[0], self.files[2]):
            f.close()


def _initialize(version: str = "2025-06-18") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}},
    }


async def test_the_tool_list_is_the_sdk_servers() -> None:
    toolset = _toolset()
    async with Client(mcp_server(toolset)) as client:
        sdk = (await client.list_tools()).tools
    async with _served(toolset) as wire:
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        ours = (await wire.answer())["result"]["tools"]
    expected = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in sdk]
    assert ours == expected and {t["name"] for t in ours} >= {"read_file", "write_file"}


async def test_the_handshake_answers_the_asked_revision_or_the_newest(wire: Wire) -> None:
    wire.send(_initialize("2025-03-26"))
    result = (await wire.answer())["result"]
    assert result["protocolVersion"] == "2025-03-26"
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "bastion" and "/notes" in result["instructions"]
    wire.send(_initialize("1999-01-01"))
    assert (await wire.answer())["result"]["protocolVersion"] == PROTOCOL_VERSIONS[-1]


async def test_calls_answer_as_the_tool_does(wire: Wire) -> None:
    call = {"jsonrpc": "2.0", "method": "tools/call"}
    wire.send(
        {
            **call,
            "id": "w",
            "params": {
                "name": "write_file",
                "arguments": {"path": "/notes/a.md", "content": "hello"},
            },
        }
    )
    written = (await wire.answer())["result"]
    assert written["isError"] is False and json.loads(written["content"][0]["text"])["success"]
    wire.send(
        {**call, "id": "r", "params": {"name": "read_file", "arguments": {"path": "/notes/a.md"}}}
    )
    read = await wire.answer()
    assert read["id"] == "r" and "hello" in read["result"]["content"][0]["text"]
    wire.send(
        {**call, "id": 3, "params": {"name": "read_file", "arguments": {"path": "/elsewhere/a.md"}}}
    )
    failed = (await wire.answer())["result"]
    assert failed["isError"] is True and "not under any mount" in failed["content"][0]["text"]
    wire.send({**call, "id": 4, "params": {"name": "nope"}})
    assert (await wire.answer())["result"]["isError"] is True
    wire.send({**call, "id": 5, "params": {"arguments": {}}})
    assert (await wire.answer())["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (b"{not json", -32700),
        (b'["a batch"]', -32600),
        (b'{"id": 7, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "resources/list"}', -32601),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}', -32601),
    ],
)
async def test_what_is_not_a_request_gets_an_error_and_the_server_goes_on(
    wire: Wire, message: bytes, code: int
) -> None:
    wire.send(message)
    assert (await wire.answer())["error"]["code"] == code
    wire.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    assert await wire.answer() == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_a_cancelled_call_gets_no_answer_and_others_are_not_held(wire: Wire) -> None:
    wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}})
    wire.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert (await wire.answer())["id"] == 2  # the slow call runs beside it
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert (await wire.answer())["id"] == 3
    wire.close()  # the server ends at once: nothing is left running
    await asyncio.sleep(0.2)
    assert wire.answers.empty()


async def test_a_line_too_long_is_refused_and_skipped() -> None:
    async with _served(_toolset(), max_message_bytes=1000) as wire:
        wire.send(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * 5000 + b'"}')
        assert (await wire.answer())["error"] == {"code": -32600, "message": "message too long"}
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert (await wire.answer())["id"] == 2
