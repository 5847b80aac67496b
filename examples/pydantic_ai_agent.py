"""A Pydantic AI agent on a governed workspace, through BastionToolset.

A scripted FunctionModel stands in for a real model so the example runs offline: pass a model
name instead (`Agent("openai:gpt-5", toolsets=[...])`).
"""

import asyncio

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.pydantic_ai import BastionToolset
from bastion.agents.tools import Toolset

mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
toolset = BastionToolset(Toolset(Workspace(mounts, policy=Policy.allow_all())))
script = [
    ToolCallPart("write_file", {"path": "/work/plan.md", "content": "ship it"}),
    ToolCallPart("write_file", {"path": "/docs/plan.md", "content": "x"}),
    TextPart("Saved to /work/plan.md; /docs is read-only."),
]
model = FunctionModel(lambda messages, info: ModelResponse(parts=[script[len(messages) // 2]]))
result = asyncio.run(Agent(model, toolsets=[toolset]).run("Save the plan."))
for part in (part for message in result.all_messages() for part in message.parts):
    print(f"{part.part_kind}: {getattr(part, 'content', None) or getattr(part, 'args', '')}")
