"""``bastion mcp`` on pipes reads and writes on the event loop, on anything else in threads
(issue 31: no thread per line); both answer the same messages the same way, lines at the limit
and over it (also the last one, cut by the end of input), and the caller's descriptors are
left blocking and open."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from pathlib import Path
from typing import Any

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.mcp_stdio import StdioServer
from bastion.agents.tools import Toolset

LIMIT = 200


def _toolset() -> Toolset:
    ws = Workspace(
        [Mount.of("/notes", MemoryStore(), scope="read_write")],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    return Toolset(ws)


def _ping(ident: int, pad: int = 0) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"method":"ping","pad":"' % ident
    return head + b"x" * max(pad - len(head) - 2, 0) + b'"}'


def _messages() -> bytes:
    exact = _ping(2, LIMIT)
    assert len(exact) == LIMIT
    call = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "/notes/a.md", "content": "hi\n"}},
    }
    lines = [
        _ping(1),
        exact,  # at the limit: read
        _ping(3, LIMIT + 1),  # one byte over: refused, and the next line read
        json.dumps(call).encode(),
        b"not json",
        _ping(5, 3 * LIMIT),  # the last line, over the limit and cut by the end of input
    ]
    return b"\n".join(lines)


async def _served_on_pipes(data: bytes) -> tuple[list[dict[str, Any]], bool]:
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    stdin, stdout = os.fdopen(r_in, "rb"), os.fdopen(w_out, "wb")
    got: list[bytes] = []

    def feed() -> None:
        with os.fdopen(w_in, "wb") as f:
            f.write(data)

    def drain() -> None:
        with os.fdopen(r_out, "rb") as f:
            got.extend(f.read().splitlines())

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for t in threads:
        t.start()
    server = StdioServer(_toolset(), stdin=stdin, stdout=stdout, max_message_bytes=LIMIT)
    await asyncio.wait_for(server.serve(), 30)
    blocking = os.get_blocking(stdin.fileno()) and os.get_blocking(stdout.fileno())
    stdin.close()
    stdout.close()
    for t in threads:
        await asyncio.to_thread(t.join, 30)
    return [json.loads(line) for line in got], blocking


async def _served_on_files(data: bytes, tmp_path: Path) -> list[dict[str, Any]]:
    source = tmp_path / "in.jsonl"
    source.write_bytes(data)
    out = io.BytesIO()
    with source.open("rb") as stdin:
        server = StdioServer(_toolset(), stdin=stdin, stdout=out, max_message_bytes=LIMIT)
        await asyncio.wait_for(server.serve(), 30)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _by_id(answers: list[dict[str, Any]]) -> list[tuple[object, object]]:
    return sorted(
        ((a.get("id"), a.get("result", a.get("error"))) for a in answers),
        key=lambda pair: (str(type(pair[0])), str(pair[0]), json.dumps(pair[1], sort_keys=True)),
    )


async def test_pipes_and_files_answer_the_same(tmp_path: Path) -> None:
    on_pipes, blocking = await _served_on_pipes(_messages())
    on_files = await _served_on_files(_messages(), tmp_path)
    assert _by_id(on_pipes) == _by_id(on_files)
    assert blocking  # the descriptors are handed back as they were given
    ids = [a.get("id") for a in on_pipes if "result" in a]
    assert sorted(ids) == [1, 2, 4]
    too_long = [a for a in on_pipes if a.get("error", {}).get("message") == "message too long"]
    assert len(too_long) == 2
    written = next(a for a in on_pipes if a.get("id") == 4)["result"]
    assert written["isError"] is False


async def test_a_client_that_goes_away_ends_the_server(tmp_path: Path) -> None:
    """The reader of the answers gone (its end closed), the server still reads every request
    and ends when the input does, without an error."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    os.close(r_out)
    stdin, stdout = os.fdopen(r_in, "rb"), os.fdopen(w_out, "wb")
    with os.fdopen(w_in, "wb") as f:
        f.write(b"\n".join(_ping(i) for i in range(20)) + b"\n")
    server = StdioServer(_toolset(), stdin=stdin, stdout=stdout, max_message_bytes=LIMIT)
    await asyncio.wait_for(server.serve(), 30)
    stdin.close()
    stdout.close()
