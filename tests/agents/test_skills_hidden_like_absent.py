"""A hidden skill, or a hidden resource of a visible skill, is absent exactly like a missing
one, and resource names never leave the skill's folder (red-team variants, area E).

Classes pinned (docs/security.md, "skills"): a skill whose ``SKILL.md`` is hidden (by its own
front matter's labels, by a sidecar, by a rule) is not there, exactly like an absent one; a
resource of a visible skill that is hidden (a labelled file, a denied folder, a folder of only
hidden entries) reads exactly like an absent one (same error but for the name); path tricks
in a resource name never leave the skill's folder.
"""

from __future__ import annotations

import pytest
from test_skills_library import put, scoped_on, skill_md

from bastion import InvalidPathError, MemoryStore, Policy, Rule
from bastion.agents.skills import SkillLibrary
from bastion.agents.skills_model import SkillNotFoundError
from bastion.agents.skills_tools import skill, skill_read

RESTRICTED = "---\nclassification: restricted\n---\nzebra\n"


async def _library() -> SkillLibrary:
    store = MemoryStore()
    await put(store, "/global/skills/x/SKILL.md", skill_md("x", "does x"))
    await put(store, "/global/skills/x/refs/a.md", "open\n")
    await put(store, "/global/skills/x/denied/s.md", "zebra\n")
    await put(store, "/global/skills/x/denied2/deep/s.md", "zebra\n")
    await put(store, "/global/skills/x/lab.md", RESTRICTED)
    await put(store, "/global/skills/x/labdir/l.md", RESTRICTED)
    await put(
        store,
        "/global/skills/fm/SKILL.md",
        "---\nname: fm\ndescription: zebra\nclassification: restricted\n---\nzebra\n",
    )
    await put(store, "/global/skills/side/SKILL.md", skill_md("side", "zebra"))
    await put(store, "/global/skills/side/SKILL.md.labels.yaml", "classification: restricted\n")
    await put(store, "/global/skills/ruled/SKILL.md", skill_md("ruled", "zebra"))
    policy = Policy(
        rules=(
            Rule.deny("*", "/global/skills/x/denied/**"),
            Rule.deny("*", "/global/skills/x/denied2/**"),
            Rule.deny("*", "/global/skills/ruled/SKILL.md"),
            Rule.allow("*", "/**"),
        )
    )
    return SkillLibrary.for_scopes(scoped_on(store, policy))


async def test_a_hidden_skill_is_an_absent_one() -> None:
    library = await _library()
    assert [s.name for s in await library.list_skills()] == ["x"]
    discovery = await library.discover()
    assert discovery.problems == () and discovery.shadowed == ()
    assert "zebra" not in await library.catalog()
    errors = []
    for name in ("fm", "side", "ruled", "absent"):
        with pytest.raises(SkillNotFoundError) as caught:
            await library.get_skill(name)
        errors.append(str(caught.value).replace(repr(name), "N"))
    assert len(set(errors)) == 1


@pytest.mark.parametrize(
    ("hidden", "absent"),
    [
        ("denied/s.md", "refs/none.md"),
        ("denied", "nodir"),
        ("denied2", "nodir"),
        ("denied2/deep", "nodir/deep"),
        ("lab.md", "none.md"),
        ("labdir", "nodir"),
        ("labdir/l.md", "nodir/l.md"),
        ("SKILL.md.labels.yaml", "none.yaml"),
    ],
)
async def test_a_hidden_resource_reads_as_an_absent_one(hidden: str, absent: str) -> None:
    library = await _library()
    listed = await skill(library, "x")
    assert [f.path for f in listed.files] == ["refs/a.md"]
    messages = []
    for path in (hidden, absent):
        with pytest.raises(Exception) as caught:
            await skill_read(library, "x", path)
        messages.append((type(caught.value), str(caught.value).replace(path, "P")))
    assert messages[0] == messages[1]
    assert "zebra" not in messages[0][1]


@pytest.mark.parametrize(
    "path",
    ["../fm/SKILL.md", "refs/../../side/SKILL.md", "..", "refs\\..\\..\\fm\\SKILL.md"],
)
async def test_resource_paths_cannot_climb_out_of_the_skill(path: str) -> None:
    library = await _library()
    with pytest.raises(InvalidPathError):
        await skill_read(library, "x", path)


async def test_an_absolute_resource_path_stays_inside_the_skill() -> None:
    library = await _library()
    with pytest.raises(Exception) as caught:
        await skill_read(library, "x", "/global/skills/fm/SKILL.md")
    assert "not found in skill 'x'" in str(caught.value)
    assert (await skill_read(library, "x", "/refs/a.md")).text == "open\n"


async def test_skill_tools_answer_hostile_arguments_as_tool_errors() -> None:
    """A backwards line range was "failed unexpectedly" (a ValueError past the tool set)."""
    from bastion.agents.tools import Toolset
    from bastion.agents.tools.skills import skill_tools

    library = await _library()
    tools = Toolset(library.workspace, extra=skill_tools(library))
    backwards = {"name": "x", "path": "SKILL.md", "start_line": 5, "end_line": 2}
    out = await tools.call("skill_read", backwards)
    assert out == {
        "success": False,
        "error": "invalid arguments for skill_read: end_line 2 is before start_line 5; "
        "fix it and call again",
    }
    for name in ("fm", "side", "ruled", "\ud800", "x" * 100_000, ""):
        out = await tools.call("skill", {"name": name})
        assert out["success"] is False and "zebra" not in out["error"]
        assert len(out["error"]) < 400
