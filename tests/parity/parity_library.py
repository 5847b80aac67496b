"""Front ends inside the process: the library (async and blocking), and the agent tool set
through each adapter (LangChain, Pydantic AI, OpenAI function calling, MCP in-process).

A driver answers :meth:`Driver.call` for the operations it :attr:`~Driver.offers`, with the
front end's own answer made plain; ``entry`` names, per operation, what of the front end it
drives (a method, a tool, a route, a command), which the coverage test checks against what
the front end exposes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from parity_support import Held, Loop, as_json, plain, told
from parity_world import OPERATOR, USER, World

from bastion.agents.tools import Toolset
from bastion.config import WorkspaceConfig


class Driver:
    """One front end acting for the principal in one world."""

    entry: ClassVar[Mapping[str, str]] = {}
    """Operation -> the front end's name for it (what it exposes)."""
    aliases: ClassVar[Mapping[str, str]] = {}
    """Other names of the front end that some operation's calls drive -> that operation."""

    @classmethod
    def drives(cls) -> frozenset[str]:
        """Every name of the front end the driver calls."""
        return frozenset(cls.entry.values()) | frozenset(cls.aliases)

    user: ClassVar[str] = USER
    """Who the driver acts for."""

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        self.world, self.loop, self.lane = world, loop, lane

    @classmethod
    def offers(cls) -> frozenset[str]:
        return frozenset(cls.entry)

    def call(self, op: str, args: dict[str, Any]) -> Any:
        raise NotImplementedError

    def prepare(self, reads: list[str]) -> None:
        """Read ``reads`` first where the front end asks for it (the agent tools change only
        files read in the session)."""

    def close(self) -> None:
        return None


def build(world: World, *, sync: bool = False, user: str = USER) -> Any:
    """The workspace of the world's file acting for ``user`` (as every entry point builds
    it)."""
    config = WorkspaceConfig.from_file(world.config)
    ws = config.build(principal=config.users[user])
    return ws.sync() if sync else ws


# -- the library -------------------------------------------------------------------------------


class PythonAsync(Driver):
    """``bastion.Workspace``: the async methods, awaited."""

    sync = False
    entry: ClassVar[Mapping[str, str]] = {
        "describe": "filesystem_map",
        "read": "read_text",
        "read_bytes": "read_bytes",
        "stat": "stat",
        "exists": "exists",
        "list": "list",
        "glob": "glob",
        "grep": "grep",
        "search": "search",
        "ask": "ask",
        "write": "write",
        "create": "write",
        "append": "append",
        "edit": "edit",
        "mkdir": "mkdir",
        "delete": "delete",
        "move": "move",
        "copy": "copy",
        "run": "run",
        "processes": "processes",
        "audit": "audit",
        "index": "search_modes",
        "reindex": "reindex",
        "index_dir": "index_directory",
        "overlay_changes": "overlay",
        "overlay_diff": "overlay",
        "overlay_apply": "overlay",
        "overlay_discard": "overlay",
    }

    aliases: ClassVar[Mapping[str, str]] = {
        "read_lines": "read",
        "has_index": "index",
        "sync": "every operation (the python-sync front end)",
    }

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        super().__init__(world, loop, lane)
        self.ws = build(world, sync=self.sync, user=self.user)

    def _do(self, value: Any) -> Any:
        return value if self.sync else self.loop.run(value)

    def call(self, op: str, args: dict[str, Any]) -> Any:
        try:
            return {"ok": self._call(op, args)}
        except Exception as exc:  # the caller's answer is the error
            return told(exc)

    def _call(self, op: str, a: dict[str, Any]) -> Any:
        ws = self.ws
        if op == "describe":
            return ws.filesystem_map()
        if op == "audit":
            return plain(ws.audit.records)
        if op == "index":
            return {"has_index": ws.has_index, "modes": list(ws.search_modes)}
        if op == "read" and "offset" in a:
            return plain(self._do(ws.read_lines(a["path"], offset=a["offset"], limit=a["limit"])))
        if op == "read":
            return self._do(ws.read_text(a["path"]))
        if op in ("stat", "exists", "mkdir"):
            return plain(self._do(getattr(ws, op)(a["path"])))
        if op == "list":
            return plain(self._do(ws.list(a["path"], recursive=a.get("recursive", False))))
        if op == "glob":
            return plain(self._do(ws.glob(a["pattern"])))
        if op == "grep":
            found = self._do(ws.grep(a["pattern"], a["path"], regex=a.get("regex", False)))
            return found.to_dict()
        if op == "search":
            found = self._do(ws.search(a["query"], mode="bm25", path=a.get("path", "/")))
            return plain(found)
        if op == "ask":
            return self._do(ws.ask(a["question"], mode="bm25")).to_dict()
        if op == "write":
            return plain(self._do(ws.write(a["path"], a["content"])))
        if op == "edit":
            return plain(self._do(ws.edit(a["path"], a["old"], a["new"])))
        if op == "delete":
            return plain(self._do(ws.delete(a["path"], recursive=a.get("recursive", False))))
        if op in ("move", "copy"):
            return plain(self._do(getattr(ws, op)(a["src"], a["dst"])))
        if op == "read_bytes":
            return plain(self._do(ws.read_bytes(a["path"], start=a["start"], end=a["end"])))
        if op == "create":
            return plain(self._do(ws.write(a["path"], a["content"], mode="create")))
        if op == "append":
            return plain(self._do(ws.append(a["path"], a["content"])))
        if op == "processes":
            return plain(self._do(ws.processes()))
        if op == "reindex":
            return plain(self._do(ws.reindex()))
        if op == "index_dir":
            return plain(self._do(ws.index_directory(a["path"])))
        if op.startswith("overlay_"):
            review = ws.overlay(a["prefix"])
            if op == "overlay_changes":
                return plain(self._do(review.changes()))
            verb = op.removeprefix("overlay_")
            return plain(self._do(getattr(review, verb)(a.get("paths"))))
        if op == "run":
            result = plain(self._do(ws.run(a["command"])))
            return {k: v for k, v in result.items() if k != "duration"}
        raise AssertionError(op)


class PythonSync(PythonAsync):
    """``bastion.SyncWorkspace``: the blocking facade."""

    sync = True


OPERATOR_TASKS = frozenset({"describe", "audit", "index", "reindex", "index_dir"})
"""What the operator is driven for: what its ``audit`` and ``reindex`` grants change."""


class PythonOperator(PythonAsync):
    """The library for an operator, who reads every principal's audit records."""

    user = OPERATOR
    entry: ClassVar[Mapping[str, str]] = {
        op: name for op, name in PythonAsync.entry.items() if op in OPERATOR_TASKS
    }
    aliases: ClassVar[Mapping[str, str]] = {}


# -- the agent tool set through each adapter ---------------------------------------------------

GRANULAR: Mapping[str, str] = {
    "describe": "tools/list",
    "read": "read_file",
    "stat": "stat",
    "list": "list_files",
    "glob": "glob",
    "grep": "grep",
    "search": "search",
    "ask": "ask",
    "write": "write_file",
    "edit": "edit_file",
    "mkdir": "mkdir",
    "delete": "delete",
    "move": "move",
    "copy": "copy",
    "run": "execute",
    "processes": "process",
}
"""Operation -> granular tool (``describe``: the tool list and the instructions)."""


def tool_arguments(op: str, a: dict[str, Any]) -> dict[str, Any]:
    """The granular tool's arguments for an operation's."""
    if op == "read":
        out = {"path": a["path"], "offset": a.get("offset", 0)}
        return out | ({"limit": a["limit"]} if "limit" in a else {})
    if op == "list":
        return {"path": a["path"], "depth": 10 if a.get("recursive") else 1}
    if op == "grep":
        return {"pattern": a["pattern"], "path": a["path"], "regex": a.get("regex", False)}
    if op == "edit":
        return {"path": a["path"], "old_string": a["old"], "new_string": a["new"]}
    if op == "run":
        return {"command": a["command"]}
    if op == "processes":
        return {"action": "list"}
    return dict(a)


class ToolDriver(Driver):
    """A tool set of the granular tools, called through one adapter."""

    entry = GRANULAR

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        super().__init__(world, loop, lane)
        self.toolset = Toolset(build(world))

    def call(self, op: str, args: dict[str, Any]) -> Any:
        if op == "describe":
            return self.describe()
        return self.tool(self.entry[op], tool_arguments(op, args))

    def prepare(self, reads: list[str]) -> None:
        for path in reads:
            self.tool("read_file", {"path": path})

    def describe(self) -> Any:
        raise NotImplementedError

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise NotImplementedError


class IntentTools(ToolDriver):
    """The intent tools (``access``, ``discover``, ``update``) through :meth:`Toolset.call`,
    the one path every adapter's call takes."""

    entry: ClassVar[Mapping[str, str]] = {
        "describe": "tools/list",
        "read": "access",
        "stat": "access",
        "exists": "access",
        "list": "discover",
        "grep": "discover",
        "search": "discover",
        "write": "update",
        "create": "update",
        "delete": "update",
    }

    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        Driver.__init__(self, world, loop, lane)
        self.toolset = Toolset(build(world), style="intent")

    def prepare(self, reads: list[str]) -> None:
        for path in reads:
            self.loop.run(self.toolset.call("access", {"path": path}))

    def call(self, op: str, a: dict[str, Any]) -> Any:
        if op == "describe":
            return {"tools": self.toolset.schemas(), "map": self.toolset.filesystem_map()}
        arguments: dict[str, Any]
        if op in ("read", "stat", "exists"):
            operation = {"read": "read", "stat": "metadata", "exists": "exists"}[op]
            arguments = {"path": a["path"], "operation": operation}
            arguments |= {k: a[k] for k in ("offset", "limit") if k in a}
        elif op == "list":
            arguments = {"path": a["path"], "depth": 10 if a.get("recursive") else 1}
        elif op == "grep":
            arguments = {"operation": "search_content", "query": a["pattern"], "path": a["path"]}
        elif op == "search":
            arguments = {"operation": "search_semantic", "query": a["query"]}
            arguments |= {"path": a["path"]} if "path" in a else {}
        elif op in ("write", "create"):
            operation = "update" if op == "write" else "create"
            arguments = {"path": a["path"], "operation": operation, "content": a["content"]}
        else:
            arguments = {"path": a["path"], "operation": "delete"}
        return self.loop.run(self.toolset.call(self.entry[op], arguments))


class LangChain(ToolDriver):
    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from bastion.agents.langchain import BastionMiddleware

        super().__init__(world, loop, lane)
        self.middleware = BastionMiddleware(self.toolset)
        self.tools = {t.name: t for t in self.middleware.tools}

    def describe(self) -> Any:
        listed = [[t.name, t.description, t.args_schema] for t in self.middleware.tools]
        return {"tools": listed, "system": self.loop.run(self.middleware.instructions())}

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        call = {"type": "tool_call", "name": name, "args": arguments, "id": "call-1"}
        message = self.loop.run(self.tools[name].ainvoke(call))
        return {"status": message.status, "content": as_json(message.content)}


class PydanticAI(ToolDriver):
    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from bastion.agents.pydantic_ai import BastionToolset

        super().__init__(world, loop, lane)
        self.adapter = BastionToolset(self.toolset)
        self.tools = loop.run(self.adapter.get_tools(None))  # type: ignore[arg-type]

    def describe(self) -> Any:
        listed = [plain(t.tool_def) for t in self.tools.values()]
        system = self.loop.run(self.adapter.get_instructions(None))  # type: ignore[arg-type]
        return {"tools": listed, "system": system}

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.loop.run(self.adapter.call_tool(name, arguments, None, self.tools[name]))  # type: ignore[arg-type]


class OpenAI(ToolDriver):
    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from bastion.agents.openai import OpenAITools

        super().__init__(world, loop, lane)
        self.adapter = OpenAITools(self.toolset)

    def describe(self) -> Any:
        return {
            "chat": self.adapter.definitions(),
            "responses": self.adapter.definitions("responses"),
        }

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        call = {"id": "c1", "function": {"name": name, "arguments": json.dumps(arguments)}}
        message = self.loop.run(self.adapter.handle(call))
        return as_json(message["content"])


class McpClientDriver(ToolDriver):
    """The tools over MCP, through the official client (held open in a task)."""

    held: Held

    def describe(self) -> Any:
        async def listing(client: Any) -> Any:
            tools = (await client.list_tools()).tools
            return {
                "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools],
                "instructions": client.instructions,
            }

        return self.held.call(listing)

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        async def calling(client: Any) -> Any:
            result = await client.call_tool(name, arguments)
            texts = [as_json(c.text) for c in result.content]
            return {"is_error": result.is_error, "content": texts}

        return self.held.call(calling)

    def close(self) -> None:
        self.held.close()


class McpInProcess(McpClientDriver):
    def __init__(self, world: World, loop: Loop, lane: str) -> None:
        from mcp import Client

        from bastion.agents.mcp import mcp_server

        super().__init__(world, loop, lane)
        self.held = Held(loop, lambda: Client(mcp_server(self.toolset)))
