"""OpenAI function calling: the tools= list and a dispatcher for the model's tool calls.

The tool calls below are what a Chat Completions response holds (scripted here, so the example
runs offline); with the official client, pass `definitions` as `tools=` and hand each item of
`message.tool_calls` to `handle`.
"""

import asyncio
import json

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.openai import OpenAITools
from bastion.agents.tools import Toolset

mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
tools = OpenAITools(Toolset(Workspace(mounts, policy=Policy.allow_all())))
definitions = tools.definitions()  # client.chat.completions.create(..., tools=definitions)
print("tools:", [d["function"]["name"] for d in definitions])
for n, path in enumerate(["/work/plan.md", "/docs/plan.md"]):  # the model's tool calls
    function = {"name": "write_file", "arguments": json.dumps({"path": path, "content": "ship"})}
    call = {"id": f"call_{n}", "type": "function", "function": function}
    message = asyncio.run(tools.handle(call))  # {"role": "tool", ...}: append it to the chat
    print(message["tool_call_id"], message["content"])
