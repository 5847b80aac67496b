"""The skill tools (``skill``, ``skill_read``, ``skill_search``) through a Toolset: flat
outputs, guarded reads, a skill the principal may not read is not found."""

from __future__ import annotations

import pytest

from bastion import Labels, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.skills import SkillLibrary
from bastion.agents.tools import Toolset
from bastion.agents.tools.skills import skill_tools

PDF = """---
name: pdf-forms
description: Fill in PDF forms and check the result.
---
# PDF forms

1. Read references/fields.md.
2. Fill each field.
"""
SECRET = """---
name: payroll-run
description: Run the monthly payroll.
---
# Payroll
Use the vault key.
"""


@pytest.fixture
async def toolsets() -> tuple[Toolset, Toolset]:
    ws = Workspace(
        [
            Mount.of("/skills", MemoryStore()),
            Mount.of("/hr-skills", MemoryStore(), labels=Labels(classification="confidential")),
        ],
        policy=Policy.allow_all(),
        principal=Principal.of("admin", clearance="restricted"),
    )
    await ws.write("/skills/pdf-forms/SKILL.md", PDF)
    await ws.write("/skills/pdf-forms/references/fields.md", "name\ndate\nsignature\n")
    await ws.write("/hr-skills/payroll-run/SKILL.md", SECRET)
    roots = ["/skills", "/hr-skills"]
    admin = Toolset(ws, extra=skill_tools(SkillLibrary(ws, roots)))
    agent_ws = ws.with_principal(Principal.of("agent"))
    agent = Toolset(agent_ws, extra=skill_tools(SkillLibrary(agent_ws, roots)))
    return admin, agent


async def test_skill_loads_instructions_and_files(toolsets) -> None:
    _, agent = toolsets
    assert {"skill", "skill_read", "skill_search"} <= set(agent.names)
    out = await agent.call("skill", {"name": "pdf-forms"})
    assert out["success"] is True and "data" not in out
    assert out["instructions"].startswith("# PDF forms")
    assert out["files"] == ["references/fields.md"]
    page = await agent.call(
        "skill_read", {"name": "pdf-forms", "path": "references/fields.md", "end_line": 2}
    )
    assert page["content"] == "name\ndate\n" and page["more"] is True


async def test_skills_the_principal_may_not_read_are_not_found(toolsets) -> None:
    admin, agent = toolsets
    assert (await admin.call("skill", {"name": "payroll-run"}))["success"] is True
    refused = await agent.call("skill", {"name": "payroll-run"})
    assert refused["success"] is False and "vault" not in refused["error"]
    found = await agent.call("skill_search", {"query": "payroll monthly"})
    assert all(s["name"] != "payroll-run" for s in found["skills"])
    assert [
        s["name"] for s in (await admin.call("skill_search", {"query": "payroll"}))["skills"]
    ] == ["payroll-run"]


async def test_skill_read_cannot_leave_the_skill(toolsets) -> None:
    _, agent = toolsets
    out = await agent.call(
        "skill_read", {"name": "pdf-forms", "path": "../../hr-skills/payroll-run/SKILL.md"}
    )
    assert out["success"] is False and "vault" not in out["error"]
