"""MCP over stdio, spoken directly: newline-delimited JSON-RPC 2.0 on stdin and stdout, the
``initialize`` handshake and the ``tools`` capability — what ``bastion mcp`` needs, without
importing the MCP SDK (most of the server's start-up time; the SDK still serves MCP over
HTTP, :mod:`bastion.agents.mcp`).

The answers are the SDK server's: the same tool list (name, description, input schema, a
read-only hint for tools that change nothing), one compact JSON text block per call with
``isError`` on a failed call, the workspace's filesystem map as the instructions. A client
that probes the stateless protocol first (``server/discover``) is told "method not found"
and falls back to the handshake, as the protocol asks. Requests run concurrently; a
``notifications/cancelled`` cancels its request, which then gets no answer.

When stdin and stdout are pipes or sockets (as an MCP client starts a server) both are read
and written on the event loop, so a call costs no trip to a thread for its request line and
none for its answer; on anything else (a file, a terminal) a thread reads and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from bastion.agents.tools.outputs import dumps
from bastion.agents.tools.toolset import Toolset
from bastion.core.version import __version__

__all__ = ["PROTOCOL_VERSIONS", "StdioServer", "serve_stdio"]

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The handshake-era protocol revisions answered, oldest to newest (the newest is offered to
a client asking for one not listed)."""
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest message read; a longer line is answered "invalid request" and skipped."""

MAX_RUNNING = 64
"""Most requests answered at once: past it no line is read until one is answered, so a client
that never reads its answers stops being read (its writes block) and memory stays bounded."""

_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_METHOD_NOT_FOUND = -32601
_INVALID_PARAMS = -32602


class _Invalid(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Called:
    """A tool call's result: its output as the JSON text of the one content block, and
    whether the call failed. The answer is written from it directly (see :meth:`message`)."""

    __slots__ = ("failed", "text")

    def __init__(self, text: str, failed: bool) -> None:
        self.text = text
        self.failed = failed

    def message(self, ident: object) -> str:
        """The answer to request ``ident``: the text ``json.dumps`` gives for ``{"jsonrpc":
        "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}],
        "isError": failed}}`` (compact, not ASCII-only), without building that object or
        walking it. The text block, the one large part, is JSON made by ``json.dumps``, so it
        holds no control character (those are escaped in it): as a JSON string it needs only
        its backslashes and quotes escaped, two ``str.replace`` calls (faster than the
        encoder's character-by-character escape, which would give the same)."""
        number = str(ident) if type(ident) is int else json.dumps(ident, ensure_ascii=False)
        text = self.text.replace("\\", "\\\\").replace('"', '\\"')
        return (
            f'{{"jsonrpc":"2.0","id":{number},"result":{{"content":[{{"type":"text",'
            f'"text":"{text}"}}],"isError":{_BOOL[self.failed]}}}}}'
        )


_BOOL = {False: "false", True: "true"}


class StdioServer:
    """One tool set served on a pair of byte streams (stdin and stdout by default)."""

    def __init__(
        self,
        toolset: Toolset,
        *,
        name: str = "bastion",
        instructions: str | None = None,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.toolset = toolset
        self.max_message_bytes = max_message_bytes
        self.name = name
        self.instructions = instructions if instructions is not None else toolset.filesystem_map()
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._writing = asyncio.Lock()
        self._pipe_out: asyncio.StreamWriter | None = None
        self._running: dict[object, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every request's, ids repeated or not
        self._tools = [_listed(tool) for tool in toolset.tools]
        self._version = __version__
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "tools/list": lambda params: {"tools": self._tools},
            "tools/call": self._call,
        }

    async def serve(self) -> None:
        """Answer messages until the client closes stdin, then let running calls finish."""
        pipes = await _pipes(self._in, self._out, self.max_message_bytes)
        try:
            if pipes is None:
                await self._serve_threads()
            else:
                self._pipe_out = pipes[1]
                await self._serve_pipe(pipes[0])
            running = list(self._tasks)
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        finally:
            if pipes is not None:
                pipes[1].close()
                pipes[2].close()
                for stream in (self._in, self._out):
                    with contextlib.suppress(OSError, ValueError):  # closed by the caller
                        os.set_blocking(stream.fileno(), True)

    async def _serve_pipe(self, reader: asyncio.StreamReader) -> None:
        """Read messages on the event loop, from a pipe or a socket (no thread per line)."""
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # the client closed stdin
                if exc.partial.strip():
                    await self._receive(exc.partial)
                return
            except asyncio.LimitOverrunError as exc:
                await reader.readexactly(exc.consumed)
                more = await _skip_line(reader)
                await self._error(None, _INVALID_REQUEST, "message too long")
                if not more:
                    return
                continue
            if line.strip():
                await self._receive(line)

    async def _serve_threads(self) -> None:
        while True:
            line = await asyncio.to_thread(self._in.readline, self.max_message_bytes + 1)
            if not line:
                break
            if len(line) > self.max_message_bytes and not line.endswith(b"\n"):
                await asyncio.to_thread(self._skip_rest)
                await self._error(None, _INVALID_REQUEST, "message too long")
                continue
            if line.strip():
                await self._receive(line)

    def _skip_rest(self) -> None:
        while (chunk := self._in.readline(self.max_message_bytes)) and not chunk.endswith(b"\n"):
            pass

    async def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            await self._error(None, _PARSE_ERROR, "Parse error")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            ident = message.get("id") if isinstance(message, dict) else None
            await self._error(_id(ident), _INVALID_REQUEST, "Invalid Request")
            return
        method = message.get("method")
        if not isinstance(method, str):
            return  # a response to a request this server never sends
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                task = self._running.get(_id(params.get("requestId")))
                if task is not None:
                    task.cancel()
            return  # notifications/initialized and every other notification: nothing to say
        ident = _id(message["id"])
        while len(self._tasks) >= MAX_RUNNING:  # backpressure: the answers are not read
            await asyncio.wait(set(self._tasks), return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.create_task(self._answer(ident, method, params))
        self._running[ident] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda done: self._forget(ident, done))

    def _forget(self, ident: object, done: asyncio.Task[None]) -> None:
        if self._running.get(ident) is done:  # a later request of the same id stays known
            del self._running[ident]

    async def _answer(self, ident: object, method: str, params: dict[str, Any]) -> None:
        handler = self._methods.get(method)
        if handler is None:
            await self._error(ident, _METHOD_NOT_FOUND, "Method not found", data=method)
            return
        try:
            result = handler(params)
            if asyncio.iscoroutine(result):
                result = await result
        except _Invalid as exc:
            await self._error(ident, exc.code, str(exc))
            return
        if type(result) is _Called:
            await self._write_line(result.message(ident))
            return
        await self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.name, "version": self._version},
            "instructions": self.instructions,
        }

    async def _call(self, params: dict[str, Any]) -> _Called:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise _Invalid(_INVALID_PARAMS, "tools/call needs a tool name")
        if arguments is not None and not isinstance(arguments, dict):
            raise _Invalid(_INVALID_PARAMS, "tools/call arguments must be an object")
        output = await self.toolset.call(name, arguments or {})
        return _Called(dumps(output), not output.get("success", False))

    async def _error(self, ident: object, code: int, message: str, data: object = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._send({"jsonrpc": "2.0", "id": ident, "error": error})

    async def _send(self, message: dict[str, Any]) -> None:
        await self._write_line(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

    async def _write_line(self, text: str) -> None:
        """Write one message (its JSON ``text``) and the newline that ends it."""
        data = text.encode("utf-8", "backslashreplace")
        out = self._pipe_out
        if out is not None:  # one write per message: never interleaved
            if not out.is_closing():
                out.write(data + b"\n")
                with contextlib.suppress(ConnectionError):  # the client has gone
                    await out.drain()
            return
        async with self._writing:  # one message per line, never interleaved
            with contextlib.suppress(BrokenPipeError, ValueError):  # the client has gone
                await asyncio.to_thread(self._write, data + b"\n")

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._out.flush()


def _listed(tool: Any) -> dict[str, Any]:
    listed: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.schema(),
    }
    if not tool.changes:
        listed["annotations"] = {"readOnlyHint": True}
    return listed


async def _pipes(
    stdin: BinaryIO, stdout: BinaryIO, limit: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.BaseTransport] | None:
    """Both streams on the event loop when both are pipes or sockets (what an MCP client
    gives a server it starts): a stream reader whose lines are at most ``limit`` bytes and a
    writer; ``None`` otherwise (a file, a terminal, a stream without a descriptor), and the
    server reads and writes in threads. Each works on a duplicate of the descriptor, which is
    switched to non-blocking (a terminal, shared with the shell, is never switched)."""
    try:
        fds = (stdin.fileno(), stdout.fileno())
        if not all(
            stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in (os.fstat(f).st_mode for f in fds)
        ):
            return None
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    read_end = os.fdopen(os.dup(fds[0]), "rb", buffering=0)
    write_end = os.fdopen(os.dup(fds[1]), "wb", buffering=0)
    try:
        incoming, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), read_end
        )
    except (OSError, ValueError):
        read_end.close()
        write_end.close()
        return None
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, write_end
        )
    except (OSError, ValueError):
        incoming.close()
        write_end.close()
        return None
    transport.set_write_buffer_limits(high=0)  # drain() waits until a message is written
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop), incoming


async def _skip_line(reader: asyncio.StreamReader) -> bool:
    """Drop the rest of an over-long line; ``False`` when the stream ends first."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return True
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return False


def _id(value: object) -> object:
    """A request id as JSON-RPC allows it (a string or a number; anything else is null)."""
    return value if isinstance(value, str | int | float) and not isinstance(value, bool) else None


async def serve_stdio(toolset: Toolset, *, name: str = "bastion") -> None:
    """Serve ``toolset`` on this process's stdin and stdout until the client leaves."""
    await StdioServer(toolset, name=name).serve()
