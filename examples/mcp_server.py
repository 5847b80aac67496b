"""An MCP server over a governed workspace, driven by the official MCP client in-process.

`python examples/mcp_server.py --stdio` serves the same tools over stdio instead, for a client
that starts servers itself (Claude Desktop, an IDE); `bastion mcp` does it from the shell.
"""

import asyncio
import sys

from mcp import Client

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.mcp import mcp_server, serve_stdio
from bastion.agents.tools import Toolset

mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
toolset = Toolset(Workspace(mounts, policy=Policy.allow_all()))


async def main() -> None:
    async with Client(mcp_server(toolset)) as client:
        print(client.instructions)
        print("tools:", [t.name for t in (await client.list_tools()).tools])
        for path in ("/work/a.md", "/docs/a.md"):
            result = await client.call_tool("write_file", {"path": path, "content": "hi"})
            print("error" if result.is_error else "ok", result.content[0].text)


asyncio.run(serve_stdio(toolset) if "--stdio" in sys.argv else main())
