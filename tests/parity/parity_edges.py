"""Front ends at the edge of the process: the HTTP API and the web page's calls (a real
server on loopback), MCP over the server's ``/mcp`` and over ``bastion mcp`` on stdio, and the
command line with ``--json``."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import httpx
from click.testing import CliRunner
from parity_library import OPERATOR_TASKS, Driver, McpClientDriver
from parity_support import Held, Loop, as_json
from parity_world import OPERATOR, USER, Tokens, World


@contextlib.contextmanager
def serving(world: World, tokens: Tokens) -> Iterator[str]:
    """The world's file served as ``bastion serve`` serves it (``opened_app``), on loopback."""
    from bastion.config import WorkspaceConfig
    from bastion.server import ServerSettings
    from bastion.server.loading import ServerFile, opened_app
    from server.support import running

    file = ServerFile(WorkspaceConfig.from_file(world.config), ServerSettings(), tokens.identity)
    with opened_app(file) as app, running(app) as url:
        yield url


def _answer(response: httpx.Response) -> Any:
    kind = response.headers.get("content-type", "")
    body = response.json() if kind.startswith("application/json") else response.text
    return {"status": response.status_code, "body": body}


class HttpApi(Driver):
    """``/v1``: each operation's endpoint, with the operation's arguments."""

    entry: ClassVar[Mapping[str, str]] = {
        "describe": "GET /v1/me",
        "read": "GET /v1/files/read",
        "read_bytes": "GET /v1/files/read",
        "stat": "GET /v1/files/stat",
        "list": "GET /v1/files",
        "glob": "GET /v1/files/glob",
        "grep": "GET /v1/files/grep",
        "search": "POST /v1/search",
        "ask": "POST /v1/ask",
        "write": "POST /v1/files/write",
        "create": "POST /v1/files/write",
        "edit": "POST /v1/files/edit",
        "mkdir": "POST /v1/files/mkdir",
        "delete": "POST /v1/files/delete",
        "move": "POST /v1/files/move",
        "copy": "POST /v1/files/copy",
        "audit": "GET /v1/audit",
        "index": "GET /v1/index/status",
        "reindex": "POST /v1/index/repair",
        "overlay_changes": "GET /v1/overlay/changes",
        "overlay_diff": "POST /v1/overlay/diff",
        "overlay_apply": "POST /v1/overlay/apply",
        "overlay_discard": "POST /v1/overlay/discard",
    }

    def __init__(self, world: World, loop: Loop, lane: str, *, url: str, token: str) -> None:
        super().__init__(world, loop, lane)
        headers = {"Authorization": f"Bearer {token}"}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=60)

    def close(self) -> None:
        self.http.close()

    def call(self, op: str, a: dict[str, Any]) -> Any:
        method, route = self.entry[op].split(" ")
        if method == "GET":
            query = dict(a)
            if op == "list":
                query["recursive"] = "true" if a.get("recursive") else "false"
            if op == "grep":
                query["regex"] = "true" if a.get("regex") else "false"
            return _answer(self.http.get(route, params=query))
        body = {**a, "mode": "create"} if op == "create" else a
        answer = _answer(self.http.post(route, json=body))
        if op == "reindex" and answer["status"] == 202:  # a job: its end, not its progress
            answer["body"] = {"job": "started"}
            answer["after"] = self._job_done()
        return answer

    def _job_done(self) -> Any:
        deadline = time.monotonic() + 120
        while True:
            status = self.http.get("/v1/index/status").json()
            if not status.get("job", {}).get("running") or time.monotonic() > deadline:
                return status
            time.sleep(0.05)


class WebPage(HttpApi):
    """What the page's script (``server/static/app.js``) sends, in its shapes."""

    entry: ClassVar[Mapping[str, str]] = {
        "describe": "GET /v1/me",
        "read": "GET /v1/files/read",
        "list": "GET /v1/files",
        "search": "GET /v1/search",
        "ask": "POST /v1/ask",
        "create": "POST /v1/ingest",
        "audit": "GET /v1/audit",
        "index": "GET /v1/index/status",
    }

    def call(self, op: str, a: dict[str, Any]) -> Any:
        get = self.http.get
        if op == "describe":
            return _answer(get("/v1/me"))
        if op == "read":  # a document of the tree, or a citation's lines
            if "offset" in a:
                query = {"path": a["path"], "offset": str(a["offset"]), "limit": str(a["limit"])}
            else:
                query = {"path": a["path"], "limit": "400"}
            return _answer(get("/v1/files/read", params=query))
        if op == "list":  # the page lists the whole tree
            return _answer(get("/v1/files", params={"path": a["path"], "recursive": "true"}))
        if op == "search":
            return _answer(get("/v1/search", params={"query": a["query"], "k": "10"}))
        if op == "ask":
            headers = {"Accept": "text/event-stream"}
            body = {"question": a["question"]}
            response = self.http.post("/v1/ask", json=body, headers=headers)
            return {"status": response.status_code, "events": _events(response.text)}
        if op == "create":  # an upload (the page's form sends no overwrite)
            folder, name = a["path"].rsplit("/", 1)
            files = {"file": (name, a["content"].encode(), "text/markdown")}
            response = self.http.post("/v1/ingest", data={"path": folder or "/"}, files=files)
            return _answer(response)
        if op == "audit":
            return _answer(get("/v1/audit", params={"limit": "200"}))
        return _answer(get("/v1/index/status"))


def _events(text: str) -> list[Any]:
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append([lines["event"], as_json(lines.get("data", ""))])
    return found


class McpServerHttp(McpClientDriver):
    """The server's ``/mcp`` endpoint, with the principal's bearer token."""

    aliases: ClassVar[Mapping[str, str]] = {
        f"{method} /mcp": "every tool" for method in ("GET", "POST", "DELETE")
    }

    def __init__(self, world: World, loop: Loop, lane: str, *, url: str, token: str) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        Driver.__init__(self, world, loop, lane)

        @contextlib.asynccontextmanager
        async def opened() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as c:
                yield c

        self.held = Held(loop, opened)


class McpStdio(McpClientDriver):
    """``bastion mcp --config FILE --as USER``, a real subprocess on stdio
    (``bastion.agents.mcp_stdio``), driven by the official client."""

    aliases: ClassVar[Mapping[str, str]] = {"mcp": "every tool"}

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from mcp import Client, StdioServerParameters

        Driver.__init__(self, world, loop, lane)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "bastion.cli", "mcp", "--config", str(world.config), "--as", USER],
        )
        self.held = Held(loop, lambda: Client(params, read_timeout_seconds=120))


class McpCliHttp(McpClientDriver):
    """``bastion mcp --transport http --config FILE --as USER``, a real subprocess."""

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from mcp import Client

        from server.support import free_port

        Driver.__init__(self, world, loop, lane)
        port = free_port()
        command = [
            sys.executable, "-m", "bastion.cli", "mcp", "--transport", "http",
            "--port", str(port), "--config", str(world.config), "--as", USER,
        ]  # fmt: skip
        self.log = (world.root.parent / f"{world.name}-mcp-http.log").open("wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(
                        f"bastion mcp --transport http did not start ({port})"
                    ) from None
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        self.held = Held(loop, lambda: Client(url, read_timeout_seconds=120))

    def close(self) -> None:
        if hasattr(self, "held"):
            self.held.close()
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


class Cli(Driver):
    """``bastion COMMAND ... --json --as USER``, in-process (click's runner)."""

    entry: ClassVar[Mapping[str, str]] = {
        "read": "cat",
        "read_bytes": "cat",
        "stat": "stat",
        "list": "ls",
        "glob": "glob",
        "grep": "grep",
        "search": "search",
        "ask": "ask",
        "write": "put",
        "create": "put",
        "delete": "rm",
        "move": "mv",
        "copy": "cp",
        "audit": "audit",
        "reindex": "reindex",
        "index_dir": "index",
        "run": "run",
        "overlay_changes": "overlay",
        "overlay_diff": "overlay",
        "overlay_apply": "overlay",
        "overlay_discard": "overlay",
    }
    aliases: ClassVar[Mapping[str, str]] = {"tree": "list"}

    def call(self, op: str, a: dict[str, Any]) -> Any:
        from bastion.cli import main

        args: list[str]
        stdin = None
        if op == "read":
            args = ["cat", a["path"]]
            if "offset" in a:
                args += ["--lines", f"{a['offset'] + 1}:{a['offset'] + a['limit']}"]
        elif op == "read_bytes":
            args = ["cat", a["path"], "--bytes", f"{a['start']}:{a['end']}"]
        elif op == "list":
            args = ["tree" if a.get("recursive") else "ls", a["path"]]
        elif op == "grep":
            args = ["grep", a["pattern"], a["path"], *(["-E"] if a.get("regex") else [])]
        elif op == "search":
            args = ["search", a["query"], "--path", a.get("path", "/")]
        elif op in ("write", "create"):
            args, stdin = (
                ["put", a["path"], *(["--create"] if op == "create" else [])],
                a["content"],
            )
        elif op == "delete":
            args = ["rm", a["path"], *(["-r"] if a.get("recursive") else [])]
        elif op in ("move", "copy"):
            args = [self.entry[op], a["src"], a["dst"]]
        elif op.startswith("overlay_"):
            args = ["overlay", op.removeprefix("overlay_"), a["prefix"], *a.get("paths", ())]
        elif op in ("audit", "reindex", "index_dir"):
            args = [self.entry[op]]
        elif op == "run":  # its command is every word after the options
            args = ["run", "--json", "--config", str(self.world.config), "--as", self.user]
            result = CliRunner().invoke(main, [*args, "--", a["command"]])
            return {
                "exit": result.exit_code,
                "stdout": as_json(result.stdout),
                "stderr": [as_json(line) for line in result.stderr.splitlines()],
            }
        else:
            args = [self.entry[op], *(a[k] for k in ("path", "pattern", "question") if k in a)]
        args += ["--json", "--config", str(self.world.config), "--as", self.user]
        result = CliRunner().invoke(main, args, input=stdin)
        return {
            "exit": result.exit_code,
            "stdout": as_json(result.stdout),
            "stderr": [as_json(line) for line in result.stderr.splitlines()],
        }


class HttpOperator(HttpApi):
    user = OPERATOR
    entry: ClassVar[Mapping[str, str]] = {
        op: name for op, name in HttpApi.entry.items() if op in OPERATOR_TASKS
    }


class WebPageOperator(WebPage):
    user = OPERATOR
    entry: ClassVar[Mapping[str, str]] = {
        op: name for op, name in WebPage.entry.items() if op in OPERATOR_TASKS
    }


class CliOperator(Cli):
    user = OPERATOR
    entry: ClassVar[Mapping[str, str]] = {
        op: name for op, name in Cli.entry.items() if op in OPERATOR_TASKS
    }
    aliases: ClassVar[Mapping[str, str]] = {}
