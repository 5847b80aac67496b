"""LangChain and LangGraph: the tool set as LangChain tools, and an agent middleware.

Conversion only. Each tool's name, description and compact JSON schema come from its one
definition (the schema is handed to LangChain as JSON Schema, not re-derived from a model);
a call runs :meth:`Toolset.call`, so it is validated, approved when it must be, and checked by
the workspace's guard like a call from any other adapter. The tool message holds the compact
JSON output; a failed call (refused, not found, bad argument) is a tool message with
``status="error"`` holding ``{"success":false,"error":"..."}``, for the model to correct.
Nothing the model sends raises into the agent loop.

:class:`BastionMiddleware` is what ``create_agent`` takes: it brings the tools, and before
each model call it adds the workspace's filesystem map for the principal (and, given a
:class:`~bastion.agents.skills.SkillLibrary`, the skills catalog) to the system prompt::

    agent = create_agent(model, middleware=[BastionMiddleware(Toolset(ws), skills=library)])

Agents run with ``ainvoke`` / ``astream``; ``invoke`` works too, running the tools on
Bastion's shared event loop (as :class:`~bastion.SyncWorkspace` does). Use one or the
other with one tool set. Needs the ``langchain`` extra (``pip install 'bastion[langchain]'``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bastion.agents.skills import SkillLibrary
from bastion.agents.tools.outputs import dumps, fail
from bastion.agents.tools.prompt import agent_instructions
from bastion.agents.tools.spec import Output
from bastion.agents.tools.toolset import Toolset
from bastion.core.errors import ConfigurationError
from bastion.workspace.sync import run_blocking

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import SystemMessage
    from langchain_core.tools import BaseTool, ToolException
except ImportError as exc:  # pragma: no cover - exercised in a test that hides langchain
    raise ConfigurationError(
        "bastion.agents.langchain needs LangChain: pip install 'bastion[langchain]'"
    ) from exc

__all__ = ["BastionMiddleware", "BastionTool", "agent_instructions", "langchain_tools"]


_UNREADABLE = "__bastion_unreadable__"
"""The one argument a hostile input is replaced with: the reason it cannot be read."""


class BastionTool(BaseTool):
    """One tool of a :class:`Toolset` as a LangChain tool."""

    toolset: Toolset

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return await super().ainvoke(self._readable(input), config, **kwargs)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return super().invoke(self._readable(input), config, **kwargs)

    def _readable(self, value: Any) -> Any:
        """``value`` (a tool call or its arguments) with arguments LangChain cannot handle
        (not an object, names that are not strings, nesting too deep or numbers too long to
        write out) replaced by their reason, so the call fails as a tool error and nothing
        raises into the agent loop."""
        if isinstance(value, dict) and value.get("type") == "tool_call":
            why = _unreadable(self.name, value.get("args"))
            return value if why is None else {**value, "args": {_UNREADABLE: why}}
        why = _unreadable(self.name, value)
        return value if why is None else {_UNREADABLE: why}

    async def _arun(self, **arguments: Any) -> tuple[str, Output]:
        why = arguments.get(_UNREADABLE)
        output = (
            fail(why) if isinstance(why, str) else await self.toolset.call(self.name, arguments)
        )
        if not output.get("success", False):
            raise ToolException(dumps(output))
        return dumps(output), output

    def _run(self, **arguments: Any) -> tuple[str, Output]:
        return run_blocking(self._arun(**arguments))


def _unreadable(name: str, arguments: object) -> str | None:
    """Why ``arguments`` cannot be handed to LangChain, or ``None`` when they can (it writes
    them out with ``str`` for its callbacks before the tool runs)."""
    if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
        return f"arguments of {name} must be a JSON object of the tool's parameters; resend"
    try:
        str(arguments)
    except RecursionError:
        return f"arguments of {name} are nested too deeply to read; resend"
    except ValueError:  # an integer of more digits than Python writes out
        return f"arguments of {name} hold a number too long to read; resend"
    return None


def langchain_tools(toolset: Toolset) -> list[BastionTool]:
    """Every tool of ``toolset`` as a LangChain tool (for ``create_agent(tools=...)``,
    LangGraph's ``ToolNode`` or ``model.bind_tools``)."""
    return [
        BastionTool(
            name=t.name,
            description=t.description,
            args_schema=t.schema(),
            toolset=toolset,
            response_format="content_and_artifact",  # the output dict rides as the artifact
            handle_tool_error=True,  # a failed call: a tool message with status="error"
            metadata={"bastion_changes": t.changes},
        )
        for t in toolset.tools
    ]


class BastionMiddleware(AgentMiddleware):
    """Gives an agent the tools of ``toolset`` and puts the filesystem map (and the skills
    catalog) into its system prompt, after any prompt of its own, before every model call
    (skills are looked up each time, so new ones show up mid-run)."""

    def __init__(self, toolset: Toolset, *, skills: SkillLibrary | None = None) -> None:
        super().__init__()
        self.toolset = toolset
        self.skills = skills
        self.tools = langchain_tools(toolset)

    async def instructions(self) -> str:
        return await agent_instructions(self.toolset, self.skills)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        text = await self.instructions()
        return await handler(request.override(system_message=_with(request.system_message, text)))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        text = run_blocking(self.instructions())
        return handler(request.override(system_message=_with(request.system_message, text)))


def _with(system: SystemMessage | None, text: str) -> SystemMessage:
    """``system`` with ``text`` added as its last block (or a new system message)."""
    if system is None:
        return SystemMessage(content=text)
    content: Any
    if isinstance(system.content, str):
        content = f"{system.content}\n\n{text}" if system.content else text
    else:
        content = [*system.content, {"type": "text", "text": text}]
    return system.model_copy(update={"content": content})
