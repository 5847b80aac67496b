"""The skill tools: ``skill`` (load a skill's instructions and list its files), ``skill_read``
(a file of a skill, by line range) and ``skill_search``, for one :class:`SkillLibrary`.

Built per library (``Toolset(ws, extra=skill_tools(library))``): the functions in
``bastion.agents.skills_tools`` do the work, through the library's workspace and so through
the guard; a skill the principal may not read is not found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bastion.agents import skills_tools as do
from bastion.agents.tools.outputs import fit_text, ok
from bastion.agents.tools.session import ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool, ToolArgumentError, tool

if TYPE_CHECKING:
    from bastion.agents.skills import SkillLibrary

__all__ = ["skill_tools"]

Name = Annotated[str, Field(description="Skill name, as in the skills catalog")]


def skill_tools(library: SkillLibrary) -> list[Tool]:
    """The three skill tools over ``library`` (add them with ``Toolset(extra=...)``)."""

    @tool(needs={Capability.READ})
    async def skill(s: ToolSession, name: Name) -> Output:
        """Load a skill: its instructions, and the files that come with it."""
        found = await do.skill(library, name)
        body = fit_text(
            found.body,
            tool="skill",
            limits=s.limits,
            scratch=s.scratch,
            hint=f"read the rest with skill_read(name={name!r}, path='SKILL.md')",
            key="instructions",
        )
        return ok(
            name=found.name,
            description=found.description,
            path=found.path,
            **body,
            files=[f.path for f in found.files],
            more_files=found.more_files or None,
        )

    @tool(needs={Capability.READ})
    async def skill_read(
        s: ToolSession,
        name: Name,
        path: Annotated[str, Field(description="File inside the skill, e.g. references/x.md")],
        start_line: Annotated[int, Field(ge=1, description="First line")] = 1,
        end_line: Annotated[int | None, Field(ge=1, description="Last line")] = None,
    ) -> Output:
        """Read a file of a skill by line range (at most 500 lines)."""
        if end_line is not None and end_line < start_line:
            raise ToolArgumentError(
                f"invalid arguments for skill_read: end_line {end_line} is before start_line "
                f"{start_line}; fix it and call again"
            )
        text = await do.skill_read(library, name, path, start_line=start_line, end_line=end_line)
        return ok(
            path=text.path,
            start_line=text.start_line,
            end_line=text.end_line,
            content=text.text,
            more=text.more or None,
        )

    @tool(needs={Capability.READ})
    async def skill_search(
        s: ToolSession,
        query: Annotated[str, Field(description="What the skill should help with")],
        k: Annotated[int, Field(ge=1, le=20, description="Most skills to return")] = 5,
    ) -> Output:
        """Find skills for a task by their name, description and content."""
        found = await do.skill_search(library, query, k=k)
        rows = [{"name": m.name, "description": m.description} for m in found.matches]
        return ok(skills=rows, total_found=len(rows))

    return [skill, skill_read, skill_search]
