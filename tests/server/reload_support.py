"""A workspace file whose access can be changed by rewriting it, tokens for it, and a small
MCP client over plain HTTP (one JSON-RPC request at a time)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import jwt

from bastion.server.reload import CHECK_EVERY

ISSUER = "https://id.test"
AUDIENCE = "bastion-api"
SECRET = "s" * 32 + "-reload-tests-shared-secret"


def workspace_file(
    folder: Path, *, roles: tuple[str, ...] = ("analyst",), index: bool = True
) -> Path:
    """``bastion.toml`` in ``folder``: ``/docs`` (SQLite, shared by every process) readable
    by the ``roles``; tokens signed with :data:`SECRET` (from ``BASTION_TEST_SECRET``); a
    keyword index when ``index``."""
    listed = ", ".join(f'"{r}"' for r in roles)
    knowledge = '[knowledge]\nfolder = "index"\nembedder = "none"\n' if index else ""
    text = f"""{knowledge}
[[mounts]]
prefix = "/docs"
url = "sqlite:docs.db"
labels = {{ tenant = "acme", classification = "internal" }}

[[policy.rules]]
effect = "allow"
actions = ["read", "list", "search", "write"]
paths = ["/**"]
roles = [{listed}]

[identity]
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
keys = [{{ algorithm = "HS256", kid = "k1", secret_env = "BASTION_TEST_SECRET" }}]

[server]
requests_per_minute = 100000
"""
    path = folder / "bastion.toml"
    rewrite(path, text)
    return path


def rewrite(path: Path, text: str) -> None:
    """Replace the file as an editor or a deployment does: a new file renamed over it; then
    wait out :data:`CHECK_EVERY`, the documented bound after which every request that begins
    sees the new file (the servers look at it at most that often; measured on the monotonic
    clock, so the wait holds whatever the scheduler does)."""
    fresh = path.with_suffix(".new")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)
    time.sleep(CHECK_EVERY + 0.02)


def token(sub: str = "ana", *, roles: tuple[str, ...] = ("analyst",), **extra: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "tenant": "acme",
        "roles": list(roles),
        "clearance": "internal",
        "iat": now,
        "exp": now + 600,
        **extra,
    }
    return jwt.encode(claims, SECRET, algorithm="HS256", headers={"kid": "k1"})


class McpSession:
    """One MCP session over streamable HTTP, driven request by request."""

    ACCEPT = "application/json, text/event-stream"

    def __init__(self, client: httpx.Client, bearer: str) -> None:
        self.client = client
        self.bearer = bearer
        self.session = ""
        self._id = 0

    def _headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.bearer}", "Accept": self.ACCEPT}
        if self.session:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = "2025-06-18"
        return headers

    def post(self, method: str, params: dict[str, Any] | None = None) -> httpx.Response:
        self._id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            body["params"] = params
        return self.client.post("/mcp", json=body, headers=self._headers())

    def open(self) -> McpSession:
        r = self.post(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        )
        assert r.status_code == 200, r.text
        self.session = r.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        done = self.client.post("/mcp", json=note, headers=self._headers())
        assert done.status_code == 202, done.text
        return self

    def read(self, path: str) -> tuple[int, dict[str, Any] | None]:
        """The HTTP status of a ``read_file`` call and the tool's output (``None`` when the
        request itself was refused)."""
        r = self.post("tools/call", {"name": "read_file", "arguments": {"path": path}})
        if r.status_code != 200:
            return r.status_code, None
        return 200, _tool_output(r)


def _tool_output(r: httpx.Response) -> dict[str, Any]:
    text = r.text
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1]
    message = json.loads(text)
    output: dict[str, Any] = json.loads(message["result"]["content"][0]["text"])
    return output
