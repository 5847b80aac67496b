"""A LangChain agent (create_agent) on a governed workspace, through BastionMiddleware.

A scripted chat model stands in for a real one so the example runs offline: use any chat
model with tool calling instead (`init_chat_model("openai:gpt-5")`), and `ainvoke` in async
code.
"""

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.langchain import BastionMiddleware
from bastion.agents.tools import Toolset


class ScriptedModel(GenericFakeChatModel):  # answers from a script; a real model binds the tools
    def bind_tools(self, tools, **kwargs):
        return self


mounts = [Mount.of("/docs", MemoryStore(), "read_only"), Mount.of("/work", MemoryStore())]
middleware = BastionMiddleware(Toolset(Workspace(mounts, policy=Policy.allow_all())))
write = {"name": "write_file", "args": {"path": "/work/plan.md", "content": "ship it"}, "id": "1"}
read = {"name": "read_file", "args": {"path": "/work/plan.md"}, "id": "2"}
script = [AIMessage("", tool_calls=[write]), AIMessage("", tool_calls=[read]), AIMessage("Saved.")]
agent = create_agent(ScriptedModel(messages=iter(script)), middleware=[middleware])
state = agent.invoke({"messages": [{"role": "user", "content": "Save the plan."}]})
for message in state["messages"]:
    print(f"{message.type}: {message.content}")
