"""The text a tool set adds to an agent's system prompt: written once, here, for every
framework adapter (LangChain's middleware, Pydantic AI's toolset instructions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bastion.agents.skills import SkillLibrary
    from bastion.agents.tools.toolset import Toolset

__all__ = ["agent_instructions"]


async def agent_instructions(toolset: Toolset, skills: SkillLibrary | None = None) -> str:
    """The text an agent's system prompt needs: the filesystem map for the principal and,
    when ``skills`` has any the principal may use, the catalog and how to load one."""
    parts = [toolset.filesystem_map()]
    if skills is not None:
        catalog = await skills.catalog()
        if catalog:
            roots = ", ".join(f"{root.path}/<name>/SKILL.md" for root in skills.roots)
            parts.append(f"{catalog}\nBefore following a skill, read its SKILL.md ({roots}).")
    return "\n\n".join(parts)
