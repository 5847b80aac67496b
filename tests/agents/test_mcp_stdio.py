"""``bastion mcp`` as a real subprocess, driven by the official MCP client: over stdio with a
config file, and over streamable HTTP with mount options."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

CONFIG = """
[knowledge]
folder = "index"
embedder = "none"

[principal]
id = "cfg-agent"
roles = ["engineer"]

[[mounts]]
prefix = "/docs"
url = "file:docs"
scope = "read_only"
description = "team documents"

[[mounts]]
prefix = "/scratch"
url = "memory://"
scope = "read_write"

[policy]
rules = [
  { effect = "deny", actions = ["*"], paths = ["/docs/hr/**"] },
  { effect = "allow", actions = ["*"], paths = ["/**"], roles = ["engineer"] },
]
"""


def _docs(root: Path) -> Path:
    (root / "docs" / "hr").mkdir(parents=True)
    (root / "docs" / "handbook.md").write_text("# Handbook\n\nReview every change.\n")
    (root / "docs" / "hr" / "pay.md").write_text("# Pay\n\nBands are secret.\n")
    return root / "docs"


def _text(result: object) -> dict[str, object]:
    return json.loads(result.content[0].text)  # type: ignore[attr-defined,no-any-return]


async def test_stdio_subprocess_with_a_config_file(tmp_path: Path) -> None:
    _docs(tmp_path)
    config = tmp_path / "bastion.toml"
    config.write_text(CONFIG, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "bastion.cli", "mcp", "--config", str(config)]
    )
    async with Client(params, read_timeout_seconds=120) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert {"read_file", "write_file", "search", "ask"} <= set(names)
        assert "/docs/  read-only (local disk)" in (client.instructions or "")
        assert "team documents" in (client.instructions or "")
        read = _text(await client.call_tool("read_file", {"path": "/docs/handbook.md"}))
        assert read["content"] == "     1\t# Handbook\n     2\t\n     3\tReview every change."
        hidden = await client.call_tool("read_file", {"path": "/docs/hr/pay.md"})
        assert hidden.is_error and _text(hidden)["error"] == "/docs/hr/pay.md not found"
        refused = _text(
            await client.call_tool("write_file", {"path": "/docs/x.md", "content": "x"})
        )
        assert refused["success"] is False and "read-only" in str(refused["error"])
        note = {"path": "/scratch/note.md", "content": "Rotate the canary keys.\n"}
        assert _text(await client.call_tool("write_file", note))["success"] is True
        found = _text(await client.call_tool("search", {"query": "canary"}))
        assert [h["path"] for h in found["hits"]] == ["/scratch/note.md"]  # type: ignore[attr-defined]
    assert (tmp_path / "index").is_dir()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    docs = _docs(tmp_path)
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    command = [
        sys.executable, "-m", "bastion.cli", "mcp", "--transport", "http", "--port", str(port),
        "--mount", f"/docs={docs}:read_only", "--mount", "/scratch=memory:read_write",
        "--style", "intent",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    raise RuntimeError((tmp_path / "server.log").read_text()) from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


async def test_streamable_http_subprocess(http_server: str) -> None:
    async with Client(http_server, read_timeout_seconds=60) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        # the owner's policy of a command-line workspace grants every action but execute:
        # running commands needs a policy that says so
        assert names == ["access", "discover", "update"]
        read = _text(await client.call_tool("access", {"path": "/docs/handbook.md", "limit": 1}))
        assert read["next_offset"] == 1
        made = {"path": "/scratch/a.md", "operation": "create", "content": "x"}
        assert _text(await client.call_tool("update", made))["success"] is True
        listed = _text(await client.call_tool("discover", {"path": "/", "extension": "md"}))
        assert listed["files"] == ["/docs/handbook.md", "/docs/hr/pay.md", "/scratch/a.md"]
    # one server is one tool session: a second connection shares what the first read/wrote
    async with Client(http_server, read_timeout_seconds=60) as again:
        upd = {"path": "/scratch/a.md", "operation": "update", "content": "y"}
        assert _text(await again.call_tool("update", upd))["success"] is True
