"""``bastion mcp`` on pipes against hostile clients: one that sends requests and never reads
its answers (the server stops reading once ``MAX_RUNNING`` answers wait, so memory stays
bounded, and every answer still comes once the client reads), one that repeats a request id
(every request is answered, none dropped at the end of input), a line cut by the end of input,
bytes that are not UTF-8, and a line over the size limit."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents import mcp_stdio
from bastion.agents.mcp_stdio import StdioServer
from bastion.agents.tools import Toolset
from bastion.core.paths import VPath

BIG = 100_000
CALLS = 300


async def _toolset() -> Toolset:
    store = MemoryStore()
    await store.write(VPath.parse("/big.md"), b"x" * (BIG - 1) + b"\n")
    ws = Workspace(
        [Mount.of("/notes", store, scope="read_write")],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    return Toolset(ws)


def _read(ident: int) -> bytes:
    call = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "/notes/big.md", "limit": 5000}},
    }
    return json.dumps(call).encode() + b"\n"


async def _serve(data: bytes, *, read_late: bool) -> tuple[list[dict[str, Any]], int, int]:
    """Serve ``data`` on real pipes; with ``read_late`` the answers are left unread until the
    server has stopped reading (or has read everything). Returns the answers, and the most
    requests and answer bytes the server held at once."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    stdin, stdout = os.fdopen(r_in, "rb"), os.fdopen(w_out, "wb")
    got: list[bytes] = []
    fed = threading.Event()

    def feed() -> None:
        with os.fdopen(w_in, "wb") as f:
            f.write(data)
        fed.set()

    def drain() -> None:
        with os.fdopen(r_out, "rb") as f:
            got.extend(f.read().splitlines())

    server = StdioServer(await _toolset(), stdin=stdin, stdout=stdout)
    feeder, drainer = threading.Thread(target=feed), threading.Thread(target=drain)
    feeder.start()
    serving = asyncio.create_task(server.serve())
    peak_tasks = peak_bytes = 0
    full = 0
    if read_late:
        while not fed.is_set() and full < 50:  # fed, or held at the bound for a while
            await asyncio.sleep(0.01)
            peak_tasks = max(peak_tasks, len(server._tasks))
            out = server._pipe_out
            if out is not None:
                peak_bytes = max(peak_bytes, out.transport.get_write_buffer_size())
            full += len(server._tasks) >= mcp_stdio.MAX_RUNNING
    drainer.start()
    await asyncio.wait_for(serving, 120)
    stdin.close()
    stdout.close()
    for t in (feeder, drainer):
        await asyncio.to_thread(t.join, 60)
    return [json.loads(line) for line in got], peak_tasks, peak_bytes


async def test_a_client_that_never_reads_its_answers_keeps_the_server_bounded() -> None:
    answers, peak_tasks, peak_bytes = await _serve(
        b"".join(_read(i) for i in range(CALLS)), read_late=True
    )
    assert peak_tasks <= mcp_stdio.MAX_RUNNING
    assert peak_bytes <= (mcp_stdio.MAX_RUNNING + 1) * 2 * BIG  # not CALLS answers
    assert sorted(a["id"] for a in answers) == list(range(CALLS))  # every one, once read
    assert all(not a["result"]["isError"] for a in answers)


async def test_a_repeated_request_id_is_answered_every_time() -> None:
    answers, _, _ = await _serve(b"".join(_read(7) for _ in range(150)), read_late=False)
    assert [a["id"] for a in answers] == [7] * 150


async def test_cut_lines_foreign_bytes_and_long_lines_get_one_error_each() -> None:
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"ping","x":"\xff\xfe"}\n',  # not UTF-8
        b"\xc3\x28\xa0\xa1\n",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file",'
        b'"arguments":{"path":"/notes/\\ud800"}}}\n',  # a lone surrogate in a path
        b'{"jsonrpc":"2.0","id":4,"method":"ping","pad":"' + b"y" * 17_000_000 + b'"}\n',
        b'{"jsonrpc":"2.0","id":5,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":6,"meth',  # cut by the end of input
    ]
    answers, _, _ = await _serve(b"".join(lines), read_late=False)
    by_id = {a["id"]: a for a in answers if a["id"] is not None}
    assert by_id[1]["result"] == {} and by_id[5]["result"] == {}
    assert by_id[3]["result"]["isError"] is True
    errors = sorted(a["error"]["message"] for a in answers if a["id"] is None)
    assert errors == ["Parse error", "Parse error", "Parse error", "message too long"]
