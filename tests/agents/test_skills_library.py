"""Finding, loading and searching skills, and the functions behind the skill tools.

The fixture folder ``fixtures/skills`` holds valid and invalid skills; it is copied into the
global area of a memory store and of a local store (a real folder under ``tmp_path``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bastion import (
    InvalidPathError,
    LocalStore,
    MemoryStore,
    NotFoundError,
    Policy,
    Principal,
    Store,
    VPath,
)
from bastion.agents.scopes import ScopedWorkspace, Scopes
from bastion.agents.skills import SkillLibrary, SkillRoot, format_catalog
from bastion.agents.skills_model import SkillNotFoundError
from bastion.agents.skills_tools import MAX_READ_LINES, skill, skill_read, skill_search
from bastion.core.errors import IsADirectoryError_
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
VALID = ["extra-fields", "pdf-forms", "release-notes"]
INVALID = {
    "Bad_Name": "name must be lowercase",
    "bad-metadata": "metadata.tags must be a string",
    "bad-yaml": "front matter is not valid YAML",
    "double--hyphen": "name must not contain consecutive hyphens",
    "long-description": "description is 1025 characters",
    "name-mismatch": "name 'other-name' must equal the folder's name",
    "no-description": "description is required",
    "no-front-matter": "must start with YAML front matter",
}
BOT = Principal.of("bot", roles={"agent"})


async def seed_fixtures(store: Store, folder: str = "/global/skills") -> None:
    """Copy the fixture skills into ``folder`` of ``store`` (straight into the store)."""
    for source in sorted(FIXTURES.rglob("*")):
        target = VPath.parse(folder).join(VPath.parse(source.relative_to(FIXTURES).as_posix()))
        if source.is_dir():
            await store.makedirs(target)
        else:
            await store.makedirs(target.parent)
            await store.write(target, source.read_bytes())


async def put(store: Store, raw: str, text: str) -> None:
    path = VPath.parse(raw)
    await store.makedirs(path.parent)
    await store.write(path, text.encode())


def skill_md(name: str, description: str, body: str = "Do the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def scoped_on(store: Store, policy: Policy | None = None, **kwargs: object) -> ScopedWorkspace:
    scopes = Scopes.on(store, policy=policy or Policy.allow_all())
    return scopes.workspace(BOT, agent_id="bot", thread_id="t1", **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / "backing", create=True)


@pytest.fixture
async def library(store: Store) -> SkillLibrary:
    await seed_fixtures(store)
    return SkillLibrary.for_scopes(scoped_on(store))


# -- discovery ---------------------------------------------------------------------------------


async def test_valid_skills_load_and_invalid_ones_are_reported(library: SkillLibrary) -> None:
    found = await library.discover()
    assert [s.name for s in found.skills] == VALID
    problems = {p.name: p for p in found.problems}
    # Front matter that is not valid YAML could have held labels: they cannot be determined,
    # so the file is hidden from everybody (fail closed) and the audit log says why.
    assert sorted(problems) == sorted(set(INVALID) - {"bad-yaml"})
    for name, expected in INVALID.items():
        if name == "bad-yaml":
            continue
        assert any(expected in e for e in problems[name].errors), problems[name].errors
        assert problems[name].path == f"/global/skills/{name}"
        assert problems[name].scope == "global"
    assert "not-a-skill" not in problems  # a folder without SKILL.md is no skill
    assert found.shadowed == ()
    cleared = library.workspace.with_principal(
        Principal.of("bot", roles={"agent"}, clearance="restricted")
    )
    seen = await SkillLibrary(cleared, library.roots).discover()
    assert "bad-yaml" not in {p.name for p in seen.problems}
    assert "bad-yaml" not in {s.name for s in seen.skills}


async def test_a_skill_carries_its_front_matter_and_body(library: SkillLibrary) -> None:
    notes = await library.get_skill("release-notes")
    assert notes.description == (
        "Write release notes from merged changes, grouped by kind. "
        "Use when preparing a release announcement."
    )
    assert (notes.license, notes.compatibility) == (
        "MIT",
        "Needs git and read access to the repository history.",
    )
    assert dict(notes.metadata) == {"author": "docs-team", "version": "1.2"}
    assert notes.allowed_tools == ("Bash(git:*)", "Read")
    assert notes.body.startswith("# Release notes\n")
    assert notes.body_line == 13
    assert (notes.path, notes.scope, notes.skill_md) == (
        "/global/skills/release-notes",
        "global",
        "/global/skills/release-notes/SKILL.md",
    )
    extra = await library.get_skill("extra-fields")
    assert extra.warnings == (
        "unknown front matter fields ignored: model",
        "metadata values read as strings (quote them): version",
    )


async def test_list_skills_gives_names_and_descriptions(library: SkillLibrary) -> None:
    listed = await library.list_skills()
    assert [(s.name, s.scope) for s in listed] == [(n, "global") for n in VALID]
    assert listed[1].description.startswith("Fill in PDF forms")


async def test_get_skill_errors_say_what_to_do(library: SkillLibrary) -> None:
    with pytest.raises(SkillNotFoundError, match="no skill named 'nope'; call list_skills"):
        await library.get_skill("nope")
    with pytest.raises(SkillNotFoundError):  # unreadable labels: hidden from the bot
        await library.get_skill("bad-yaml")
    cleared = SkillLibrary(
        library.workspace.with_principal(Principal.of("ops", clearance="restricted")),
        library.roots,
    )
    with pytest.raises(SkillNotFoundError):  # not even for the highest clearance
        await cleared.get_skill("bad-yaml")
    with pytest.raises(SkillNotFoundError, match="lowercase"):
        await library.get_skill("Bad_Name")


async def test_the_more_specific_skill_wins(store: Store) -> None:
    await put(store, "/global/skills/style/SKILL.md", skill_md("style", "Global style guide."))
    await put(store, "/global/skills/only-global/SKILL.md", skill_md("only-global", "G."))
    await put(store, "/agents/bot/skills/style/SKILL.md", skill_md("style", "Agent style."))
    scoped = scoped_on(store)
    library = SkillLibrary.for_scopes(scoped)
    assert (await library.get_skill("style")).scope == "agent"
    await scoped.workspace.write("/thread/skills/style/SKILL.md", skill_md("style", "Thread."))
    found = await library.discover()
    assert [(s.name, s.scope, s.description) for s in found.skills] == [
        ("only-global", "global", "G."),
        ("style", "thread", "Thread."),
    ]
    assert found.shadowed == ("/agent/skills/style", "/global/skills/style")
    assert (await library.get_skill("style")).path == "/thread/skills/style"


async def test_an_invalid_override_is_reported_and_the_next_one_used(store: Store) -> None:
    await put(store, "/global/skills/style/SKILL.md", skill_md("style", "Global style guide."))
    await put(store, "/agents/bot/skills/style/SKILL.md", "---\nname: style\n---\nbroken\n")
    library = SkillLibrary.for_scopes(scoped_on(store))
    found = await library.discover()
    assert [(s.name, s.scope) for s in found.skills] == [("style", "global")]
    assert [(p.path, p.errors) for p in found.problems] == [
        ("/agent/skills/style", ("description is required",))
    ]
    assert (await library.get_skill("style")).scope == "global"


async def test_plain_roots_on_any_workspace(store: Store) -> None:
    await put(store, "/team/a/SKILL.md", skill_md("a", "From the team."))
    await put(store, "/mine/a/SKILL.md", skill_md("a", "Mine."))
    ws = scoped_on(store).workspace  # any workspace will do; roots name its folders
    await ws.write("/agent/x/a/SKILL.md", skill_md("a", "Agent x."))
    library = SkillLibrary(ws, [SkillRoot.of("/agent/x", "mine"), "/global/none"])
    [only] = await library.list_skills()
    assert (only.name, only.scope, only.description) == ("a", "mine", "Agent x.")


# -- catalog -----------------------------------------------------------------------------------


async def test_catalog_is_compact_and_escaped(library: SkillLibrary) -> None:
    text = await library.catalog()
    lines = text.splitlines()
    assert lines[0] == "<available_skills>" and lines[-1] == "</available_skills>"
    assert lines[2] == (
        '<skill name="pdf-forms">Fill in PDF forms and read their fields. Use when the user '
        "gives a PDF with form fields.</skill>"
    )
    assert len(lines) == 2 + len(VALID)
    assert await SkillLibrary(library.workspace, ["/nowhere"]).catalog() == ""


def test_catalog_cuts_at_max_skills() -> None:
    from bastion.agents.skills import SkillSummary

    many = [SkillSummary(f"s{i}", "d & <e>", f"/s{i}", "global") for i in range(5)]
    text = format_catalog(many, max_skills=2)
    assert text.splitlines()[1] == '<skill name="s0">d &amp; &lt;e&gt;</skill>'
    assert '<more count="3">use skill_search</more>' in text


# -- search ------------------------------------------------------------------------------------


async def test_keyword_search_without_an_index(library: SkillLibrary) -> None:
    matches = await library.search_skills("fill in a PDF form")
    assert [m.name for m in matches] == ["pdf-forms"]
    assert matches[0].score > 0
    assert await library.search_skills("quantum chromodynamics") == []
    assert await library.search_skills("   ") == []
    ranked = await library.search_skills("release notes for a pdf")
    assert [m.name for m in ranked] == ["release-notes", "pdf-forms"]
    result = await skill_search(library, "release", k=1)
    assert result.format() == f"release-notes: {ranked[0].description}"
    assert "no skill matches" in (await skill_search(library, "zzz")).format()


async def test_search_goes_through_the_index_when_there_is_one(store: Store) -> None:
    await seed_fixtures(store)
    scoped = scoped_on(store, knowledge=Knowledge(MemoryIndex()))
    await scoped.workspace.rebuild_index()
    library = SkillLibrary.for_scopes(scoped)
    # These words are only in pdf-forms/references/fields.md: the index finds them there.
    matches = await library.search_skills("checkbox signature")
    assert [m.name for m in matches] == ["pdf-forms"]
    assert "checkbox" in matches[0].snippet
    assert (await library.search_skills("Group changes as Added, Changed, Fixed"))[0].name == (
        "release-notes"
    )
    # Invalid skills are indexed files, but never a search result.
    assert await library.search_skills("front matter is not valid YAML") == []


async def test_index_hits_in_a_shadowed_copy_are_not_credited(store: Store) -> None:
    await seed_fixtures(store)
    await put(store, "/agents/bot/skills/pdf-forms/SKILL.md", skill_md("pdf-forms", "Mine."))
    scoped = scoped_on(store, knowledge=Knowledge(MemoryIndex()))
    await scoped.workspace.rebuild_index()
    library = SkillLibrary.for_scopes(scoped)
    # The words are in the global copy, which the agent's own pdf-forms shadows: skill_read
    # could not reach that file, so the hit is not the agent's skill.
    assert await library.search_skills("checkbox signature") == []
    [mine] = await library.search_skills("Mine")
    assert (mine.name, mine.path) == ("pdf-forms", "/agent/skills/pdf-forms")


# -- the tools ---------------------------------------------------------------------------------


async def test_skill_loads_the_body_and_lists_the_files(library: SkillLibrary) -> None:
    loaded = await skill(library, "pdf-forms")
    assert loaded.body.startswith("# Filling PDF forms")
    assert [(f.path, f.size) for f in loaded.files] == [
        ("assets/checklist.txt", len((FIXTURES / "pdf-forms/assets/checklist.txt").read_bytes())),
        ("references/fields.md", len((FIXTURES / "pdf-forms/references/fields.md").read_bytes())),
        ("scripts/fields.py", len((FIXTURES / "pdf-forms/scripts/fields.py").read_bytes())),
    ]
    assert not loaded.more_files
    text = loaded.format()
    assert text.startswith('<skill name="pdf-forms" path="/global/skills/pdf-forms">\n')
    assert "  references/fields.md (" in text
    assert (await skill(library, "release-notes")).files == ()


async def test_skill_read_returns_a_line_range(library: SkillLibrary) -> None:
    part = await skill_read(library, "pdf-forms", "references/fields.md", start_line=3, end_line=4)
    assert part.text == "- text: a single line of text\n- checkbox: on or off\n"
    assert (part.start_line, part.end_line, part.more) == (3, 4, True)
    assert part.format().endswith("[more: read from line 5]")
    rest = await skill_read(library, "pdf-forms", "references/fields.md", start_line=5)
    assert (rest.end_line, rest.more) == (6, False)
    past = await skill_read(library, "pdf-forms", "references/fields.md", start_line=50)
    assert (past.text, past.end_line) == ("", 49)
    assert "fewer than 50 lines" in past.format()
    whole = await skill_read(library, "pdf-forms", "SKILL.md")
    assert whole.text.startswith("---\nname: pdf-forms\n")
    with pytest.raises(ValueError):
        await skill_read(library, "pdf-forms", "SKILL.md", start_line=0)


async def test_skill_read_caps_the_lines(store: Store) -> None:
    long = "".join(f"line {i}\n" for i in range(1, MAX_READ_LINES + 50))
    await put(store, "/global/skills/big/SKILL.md", skill_md("big", "Big."))
    await put(store, "/global/skills/big/references/long.md", long)
    library = SkillLibrary.for_scopes(scoped_on(store))
    part = await skill_read(library, "big", "references/long.md", end_line=10_000)
    assert (part.end_line, part.more) == (MAX_READ_LINES, True)


async def test_skill_read_errors_point_at_the_skill(library: SkillLibrary) -> None:
    with pytest.raises(
        NotFoundError, match=re.escape("references/nope.md not found in skill 'pdf-forms'")
    ):
        await skill_read(library, "pdf-forms", "references/nope.md")
    with pytest.raises(IsADirectoryError_, match="references is a folder of skill"):
        await skill_read(library, "pdf-forms", "references")
    with pytest.raises(InvalidPathError):
        await skill_read(library, "pdf-forms", "/")
    with pytest.raises(SkillNotFoundError):
        await skill_read(library, "nope", "SKILL.md")
