"""MCP at /mcp on the same server: each session bound to its bearer token's principal."""

from __future__ import annotations

import json

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .support import Token, auth


async def _read(url: str, token: str, path: str) -> tuple[bool, str]:
    http = httpx2.AsyncClient(headers=auth(token))
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        result = await client.call_tool("read_file", {"path": path})
        return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]


async def test_each_token_gets_its_own_view(server: str, token: Token) -> None:
    hr = token("mei", roles=("hr",), clearance="confidential")
    failed, text = await _read(server, hr, "/docs/hr/pay.md")
    assert failed is False and "12 percent" in json.loads(text)["content"]
    failed, text = await _read(server, token(), "/docs/hr/pay.md")
    assert failed is True and json.loads(text) == {
        "success": False,
        "error": "/docs/hr/pay.md not found",
    }


async def test_tools_list_follows_the_principal(server: str, token: Token) -> None:
    http = httpx2.AsyncClient(headers=auth(token()))
    async with http, Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"read_file", "write_file", "grep"} <= names
        assert "/secret" not in (client.instructions or "")


def test_mcp_without_a_token_is_401(client: httpx.Client) -> None:
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("steal", [True, False])
def test_a_session_id_is_unknown_to_another_principal(
    client: httpx.Client, token: Token, steal: bool
) -> None:
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
    accept = {"Accept": "application/json, text/event-stream"}
    opened = client.post("/mcp", json=init, headers={**auth(token("owner")), **accept})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    who = token("thief") if steal else token("owner")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    headers = {
        **auth(who),
        **accept,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-06-18",
    }
    r = client.post("/mcp", json=listing, headers=headers)
    if steal:
        assert r.status_code == 404
    else:
        assert r.status_code == 200 and "read_file" in r.text
