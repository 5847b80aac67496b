"""``bastion serve`` stops gracefully: on ``SIGTERM`` or ``SIGINT`` it refuses new connections
at once, lets the requests already begun finish (a streamed answer whose question was still
arriving when the signal came), ends the MCP sessions' listening streams cleanly, and exits
``0``; a request still open when ``[server] shutdown_grace_s`` runs out is cut, and the
process still exits ``0``. Real server processes on loopback."""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from .reload_support import McpSession, token
from .serve_support import PLAN, Pending, Served, bearer, events, read_response, serve_file

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Served]:
    grace = getattr(request, "param", 600)
    config = serve_file(tmp_path, f'shutdown_grace_s = {grace}\nlog_format = "json"\n')
    server = Served(config)
    try:
        wrote = server.client.post(
            "/v1/files/write",
            json={"path": "/docs/plan.md", "content": PLAN},
            headers=bearer(token()),
        )
        assert wrote.status_code == 201, wrote.text
        yield server
    finally:
        server.close()


def _listen(server: Served, session: McpSession) -> socket.socket:
    """An MCP session's listening stream (``GET /mcp``), its response headers read."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    head = (
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        f"Authorization: Bearer {session.bearer}\r\nmcp-session-id: {session.session}\r\n"
        "mcp-protocol-version: 2025-06-18\r\n\r\n"
    )
    sock.sendall(head.encode())
    seen = b""
    while b"\r\n\r\n" not in seen:
        chunk = sock.recv(4096)
        assert chunk, seen
        seen += chunk
    assert seen.startswith(b"HTTP/1.1 200"), seen
    assert b"text/event-stream" in seen.lower()
    return sock


def _log(server: Served) -> list[dict[str, object]]:
    return [json.loads(line) for line in server.lines()]


def test_sigterm_finishes_the_open_stream_refuses_new_connections_and_exits_0(
    served: Served,
) -> None:
    ana = token()
    session = McpSession(served.client, ana).open()
    listening = _listen(served, session)
    asking = Pending(
        served.port,
        "/v1/ask",
        {"question": "What is the heron count?"},
        {**bearer(ana), "Accept": "text/event-stream", "X-Request-Id": "asked-before-stop"},
    )
    served.wait_in_flight(2)  # the listening stream and the question, half sent

    served.signal(signal.SIGTERM)

    assert served.refuses_connections()
    status, body = asking.finish()  # the rest of the question, after the signal
    assert status == 200
    got = events(body)
    assert got[0][0] == "status" and got[-1][0] == "done"
    answer = "".join(str(data["text"]) for name, data in got if name == "answer")
    assert "twelve" in answer
    while listening.recv(65536):  # the listening stream ends (a hang fails on the timeout)
        pass
    listening.close()
    assert served.wait() == 0

    lines = _log(served)
    asked = [line for line in lines if line.get("request_id") == "asked-before-stop"]
    assert asked and asked[-1]["status"] == 200 and asked[-1]["path"] == "/v1/ask"
    stopping = [line for line in lines if str(line["message"]).startswith("stopping:")]
    assert stopping and "2 request(s) open" in str(stopping[0]["message"])
    assert lines[-1]["message"] == "stopped"


@pytest.mark.parametrize("served", [1], indirect=True)
def test_a_request_still_open_after_the_grace_period_is_cut_and_sigint_exits_0(
    served: Served,
) -> None:
    asking = Pending(
        served.port, "/v1/ask", {"question": "What is the heron count?"}, bearer(token())
    )
    served.wait_in_flight(1)

    served.signal(signal.SIGINT)

    assert served.wait() == 0  # the question never finishes arriving: cut after a second
    status, body = read_response(asking.sock)
    assert status == 503 and json.loads(body)["error"]["code"] == "stopping"
    lines = _log(served)
    assert any("timeout graceful shutdown exceeded" in str(line["message"]) for line in lines)
    cut = [line for line in lines if line.get("path") == "/v1/ask"]
    assert [line["status"] for line in cut] == [503]
    assert lines[-1]["message"] == "stopped"
