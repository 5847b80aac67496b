"""The functions behind the agent tools ``skill``, ``skill_read`` and ``skill_search``.

Plain async functions over a :class:`~bastion.agents.skills.SkillLibrary` with typed results;
the tool definitions wrap them. Each result has ``format()``: the text an agent is shown.
Everything is read through the library's workspace, as its principal.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from bastion.agents.skills import SkillLibrary, SkillMatch
from bastion.agents.tools.session import split_lines
from bastion.core.errors import (
    InvalidPathError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    ScopeError,
)
from bastion.core.paths import VPath

__all__ = [
    "MAX_READ_LINES",
    "SkillFile",
    "SkillFileText",
    "SkillLoad",
    "SkillSearchResult",
    "skill",
    "skill_read",
    "skill_search",
]

MAX_READ_LINES = 500
"""Most lines one ``skill_read`` returns."""
MAX_LISTED_FILES = 200
"""Most files of a skill that ``skill`` lists."""


@dataclass(frozen=True, slots=True)
class SkillFile:
    """A file that ships with a skill."""

    path: str
    """Relative to the skill's folder (``references/forms.md``)."""
    size: int


@dataclass(frozen=True, kw_only=True)
class SkillLoad:
    """What the ``skill`` tool returns: the instructions and the files beside them."""

    name: str
    description: str
    path: str
    """Workspace path of the skill's folder."""
    scope: str
    body: str
    files: tuple[SkillFile, ...]
    """Every file of the skill the principal may read, ``SKILL.md`` excluded, by path."""
    more_files: bool = False
    """True when the skill has more files than were listed."""
    warnings: tuple[str, ...] = ()

    def format(self) -> str:
        head = f"<skill name={quoteattr(self.name)} path={quoteattr(self.path)}>"
        lines = [head, self.body.strip(), "</skill>"]
        if self.files:
            lines.append(f"Files of this skill (read them with skill_read({self.name!r}, path)):")
            lines += [f"  {f.path} ({f.size} bytes)" for f in self.files]
            if self.more_files:
                lines.append(f"  ... more files; list {self.path} to see them all")
        return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class SkillFileText:
    """What the ``skill_read`` tool returns: a range of lines of one file of a skill."""

    name: str
    path: str
    """Relative to the skill's folder."""
    start_line: int
    """First line returned (1-based)."""
    end_line: int
    """Last line returned; ``start_line - 1`` when nothing was (past the end of the file)."""
    text: str
    more: bool
    """True when the file goes on after ``end_line``."""

    def format(self) -> str:
        if self.end_line < self.start_line:
            return f"{self.path} of skill {self.name!r} has fewer than {self.start_line} lines"
        head = f"{self.path} of skill {self.name!r}, lines {self.start_line}-{self.end_line}"
        gap = "" if self.text.endswith("\n") else "\n"
        tail = f"{gap}[more: read from line {self.end_line + 1}]" if self.more else ""
        return f"{head}:\n{self.text}{tail}"


@dataclass(frozen=True, slots=True)
class SkillSearchResult:
    """What the ``skill_search`` tool returns."""

    query: str
    matches: tuple[SkillMatch, ...]

    def format(self) -> str:
        if not self.matches:
            return f"no skill matches {self.query!r}; call list_skills to see them all"
        return "\n".join(f"{m.name}: {m.description}" for m in self.matches)


async def skill(library: SkillLibrary, name: str) -> SkillLoad:
    """Load the skill ``name``: its instructions and the list of its files."""
    found = await library.get_skill(name)
    folder = VPath.parse(found.path)
    limit = MAX_LISTED_FILES * 4  # folders count towards the glob's limit too
    entries = await library.workspace.glob("**/*", path=folder, limit=limit)
    files = [
        SkillFile("/".join(e.path.parts[len(folder.parts) :]), e.size)
        for e in entries
        if e.is_file and e.path != folder / "SKILL.md"
    ]
    return SkillLoad(
        name=found.name,
        description=found.description,
        path=found.path,
        scope=found.scope,
        body=found.body,
        files=tuple(files[:MAX_LISTED_FILES]),
        more_files=len(entries) >= limit or len(files) > MAX_LISTED_FILES,
        warnings=found.warnings,
    )


async def skill_read(
    library: SkillLibrary,
    name: str,
    path: str,
    *,
    start_line: int = 1,
    end_line: int | None = None,
) -> SkillFileText:
    """Lines ``start_line`` to ``end_line`` (inclusive, 1-based; at most
    :data:`MAX_READ_LINES`) of the file ``path`` inside the skill ``name``. The path is taken
    inside the skill's folder: ``..`` cannot leave it."""
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise ValueError("start_line must be >= 1 and end_line >= start_line")
    found = await library.get_skill(name)
    rel = _inside(path)
    full = VPath.parse(found.path).join(rel)
    count = MAX_READ_LINES if end_line is None else min(end_line - start_line + 1, MAX_READ_LINES)
    shown = "/".join(rel.parts)
    try:
        text = await library.workspace.read_text(full, offset=start_line - 1, limit=count + 1)
    except (NotFoundError, ScopeError, NotADirectoryError_):
        raise NotFoundError(
            f"{shown} not found in skill {name!r}; call skill({name!r}) to list its files"
        ) from None
    except IsADirectoryError_:
        raise IsADirectoryError_(
            f"{shown} is a folder of skill {name!r}; call skill({name!r}) to list its files"
        ) from None
    lines = split_lines(text)
    more = len(lines) > count
    kept = lines[:count]
    return SkillFileText(
        name=found.name,
        path=shown,
        start_line=start_line,
        end_line=start_line + len(kept) - 1,
        text="".join(kept),
        more=more,
    )


async def skill_search(library: SkillLibrary, query: str, *, k: int = 5) -> SkillSearchResult:
    """The skills that best match ``query`` (name and description, or the search index)."""
    return SkillSearchResult(query, tuple(await library.search_skills(query, k=k)))


def _inside(path: str) -> VPath:
    """``path`` relative to a skill's folder; one that names nothing or climbs out is refused."""
    rel = VPath.parse(path)
    if rel.is_root:
        raise InvalidPathError("give a file of the skill, such as SKILL.md or references/x.md")
    return rel
