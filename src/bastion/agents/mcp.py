"""The MCP server: a tool set served over streamable HTTP with the official SDK (and over
stdio by :mod:`bastion.agents.mcp_stdio`, which answers the same without the SDK).

Conversion only: ``tools/list`` gives each tool's name, description and compact schema from
its one definition (plus a read-only hint for tools that change nothing), and ``tools/call``
runs :meth:`Toolset.call`. A tool's output is one compact JSON text block; a failed call
sets ``isError`` so the model sees the one-line error and can correct itself. The server's
instructions are the workspace's filesystem map for the principal.

One server serves one tool set, so one principal: every client of an HTTP server acts for
it. Start one server per principal (or put an authenticating front before it).
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext

from bastion.agents.mcp_stdio import serve_stdio
from bastion.agents.tools.outputs import dumps
from bastion.agents.tools.toolset import Toolset
from bastion.core.version import __version__

__all__ = ["mcp_server", "serve_http", "serve_stdio"]


def mcp_server(
    toolset: Toolset, *, name: str = "bastion", instructions: str | None = None
) -> Server[Any]:
    """A low-level MCP :class:`~mcp.server.Server` serving ``toolset``."""

    listed = [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.schema(),
            annotations=types.ToolAnnotations(read_only_hint=True) if not t.changes else None,
        )
        for t in toolset.tools
    ]
    schemas = {tool.name: tool.input_schema for tool in listed}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        output = await toolset.call(params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(text=dumps(output))],
            is_error=not output.get("success", False),
        )

    return Server(
        name,
        version=__version__,
        instructions=instructions if instructions is not None else toolset.filesystem_map(),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_http(
    toolset: Toolset,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    name: str = "bastion",
) -> None:
    """Serve ``toolset`` over streamable HTTP at ``http://host:port/mcp`` until stopped."""
    import uvicorn

    app = mcp_server(toolset, name=name).streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
