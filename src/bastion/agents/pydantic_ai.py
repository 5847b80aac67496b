"""Pydantic AI: the tool set as a Pydantic AI toolset.

Conversion only. Each tool's name, description and compact JSON schema come from its one
definition; a call runs :meth:`Toolset.call`, so it is validated, approved when it must be,
and checked by the workspace's guard like a call from any other adapter. The arguments are
not validated a second time by Pydantic AI (the tool set's own validation answers with the
one-line error the other adapters give); the result is the flat output, failures included
(``{"success": false, "error": "..."}``), so a refusal is something the model reads and
works around, not a retry that ends the run.

The toolset's instructions are the workspace's filesystem map for the principal and, given a
:class:`~bastion.agents.skills.SkillLibrary`, the skills catalog: Pydantic AI adds them to the
agent's instructions on every request::

    agent = Agent(model, toolsets=[BastionToolset(Toolset(ws), skills=library)])

Tools that change files are ``sequential``: they run after the calls the model made before
them in the same response, so a ``read_file`` then ``write_file`` pair keeps its order.
Needs the ``pydantic-ai`` extra (``pip install 'bastion[pydantic-ai]'``).
"""

from __future__ import annotations

from typing import Any

from bastion.agents.skills import SkillLibrary
from bastion.agents.tools.prompt import agent_instructions
from bastion.agents.tools.spec import Output
from bastion.agents.tools.toolset import Toolset
from bastion.core.errors import ConfigurationError

try:
    from pydantic_ai import RunContext, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as exc:  # pragma: no cover - exercised in a test that hides pydantic_ai
    raise ConfigurationError(
        "bastion.agents.pydantic_ai needs Pydantic AI: pip install 'bastion[pydantic-ai]'"
    ) from exc

__all__ = ["BastionToolset"]

_ANY_ARGUMENTS = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)
"""Takes any JSON object: the arguments are validated by the tool set, once."""


class BastionToolset(AbstractToolset[Any]):
    """A :class:`Toolset` as a Pydantic AI toolset (any agent dependencies type)."""

    def __init__(
        self,
        toolset: Toolset,
        *,
        skills: SkillLibrary | None = None,
        id: str | None = "bastion",
        max_retries: int = 1,
    ) -> None:
        self.toolset = toolset
        self.skills = skills
        self._id = id
        self._tools: dict[str, ToolsetTool[Any]] = {
            t.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=t.name,
                    description=t.description,
                    parameters_json_schema=t.schema(),
                    sequential=t.changes,
                    metadata={"bastion_changes": t.changes},
                ),
                max_retries=max_retries,
                args_validator=_ANY_ARGUMENTS,
            )
            for t in toolset.tools
        }

    @property
    def id(self) -> str | None:
        return self._id

    async def get_instructions(self, ctx: RunContext[Any]) -> str:
        return await agent_instructions(self.toolset, self.skills)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return dict(self._tools)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Output:
        return await self.toolset.call(name, tool_args)
