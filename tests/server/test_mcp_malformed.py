"""Malformed requests to ``/mcp``: each is a 4xx whose message is one line (the MCP SDK's
own validation errors run to many lines naming its internal types), and a well-formed
session still works after them."""

from __future__ import annotations

import httpx
import pytest

from .support import Token, auth

_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

MALFORMED = [
    pytest.param(b"[]", id="empty-batch"),
    pytest.param(b"{not json", id="not-json"),
    pytest.param(b"{}", id="empty-object"),
    pytest.param(b'{"jsonrpc":"2.0"}', id="no-method"),
    pytest.param(b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', id="wrong-version"),
    pytest.param(b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', id="object-id"),
    pytest.param(b'[{"jsonrpc":"2.0","id":1,"method":1},{"x":2}]', id="bad-batch"),
    pytest.param(b'"just a string"', id="string"),
    pytest.param(b"null", id="null"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}', id="lone-surrogate"),
]


@pytest.mark.parametrize("body", MALFORMED)
def test_a_malformed_mcp_body_is_a_4xx_with_one_line(
    client: httpx.Client, token: Token, body: bytes
) -> None:
    r = client.post("/mcp", content=body, headers={**auth(token()), **_ACCEPT})
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    message = r.json()["error"]["message"]
    assert isinstance(message, str) and message
    assert "\n" not in message, message
    assert str(len(r.content)) == r.headers["content-length"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_without_a_session_is_a_4xx_with_one_line(
    client: httpx.Client, token: Token, method: str
) -> None:
    r = client.request(method, "/mcp", headers={**auth(token()), **_ACCEPT})
    assert 400 <= r.status_code < 500
    assert "\n" not in r.json()["error"]["message"]


def test_a_session_opens_after_malformed_bodies(client: httpx.Client, token: Token) -> None:
    for param in MALFORMED:
        client.post("/mcp", content=param.values[0], headers={**auth(token()), **_ACCEPT})
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    opened = client.post("/mcp", json=init, headers={**auth(token()), **_ACCEPT})
    assert opened.status_code == 200, opened.text
    assert opened.headers["mcp-session-id"]
