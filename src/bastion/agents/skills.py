"""Skills: folders of instructions an agent loads when a task calls for them.

A :class:`SkillLibrary` finds skills under one or more root folders of a workspace (for a
scoped workspace: ``/thread/skills``, ``/agent/skills``, ``/global/skills``, most specific
first) and serves them to one principal. Every read goes through the workspace, so a skill the
principal may not read is not there for it: not in :meth:`~SkillLibrary.list_skills`, the
catalog, a search or :meth:`~SkillLibrary.get_skill`.

Two skills of the same name: the one under the earlier root wins. An invalid skill is reported
(:attr:`SkillDiscovery.problems`) and not loaded; a valid one of the same name under a later
root is used instead. Nothing is cached: each call sees the files as they are.

The agent tools (``skill``, ``skill_read``, ``skill_search``) are in
:mod:`bastion.agents.skills_tools`.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape, quoteattr

from bastion.agents.skills_model import (
    InvalidSkillError,
    Skill,
    SkillNotFoundError,
    SkillProblem,
    check_skill_name,
    parse_skill_md,
)
from bastion.core.errors import (
    LimitError,
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    PolicyDeniedError,
    ScopeError,
    StoreError,
    UnsupportedFileError,
)
from bastion.core.paths import VPath
from bastion.workspace.workspace import Workspace

if TYPE_CHECKING:
    from bastion.agents.scopes import ScopedWorkspace

__all__ = [
    "DEFAULT_MAX_SKILL_BYTES",
    "SkillDiscovery",
    "SkillLibrary",
    "SkillMatch",
    "SkillRoot",
    "SkillSummary",
    "format_catalog",
    "keyword_matches",
]

DEFAULT_MAX_SKILL_BYTES = 256 * 1024
"""Largest ``SKILL.md`` read; a bigger one is reported, not loaded (keep detail in
``references/``: the specification advises a body under 5,000 tokens)."""

_HIDDEN = (NotFoundError, ScopeError, PolicyDeniedError, NotADirectoryError_)
"""What a lookup raises for an entry the principal may not see (or that is not a folder)."""
_BROKEN = (LimitError, StoreError, UnsupportedFileError)
"""What makes a visible ``SKILL.md`` unreadable: reported as a problem of the skill."""
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    _WORD.findall(
        "a an and are as at be by for from how i in is it me my of on or the this to use when with"
    )
)


@dataclass(frozen=True, slots=True)
class SkillRoot:
    """A folder whose sub-folders are skills."""

    path: VPath
    scope: str
    """The name shown for skills found here (``thread``, ``agent``, ``global``)."""

    @classmethod
    def of(cls, path: str | VPath, scope: str | None = None) -> SkillRoot:
        vp = VPath.parse(path)
        return cls(vp, scope if scope is not None else str(vp))


@dataclass(frozen=True, slots=True)
class SkillSummary:
    """A skill's name and description: what a catalog or a listing shows."""

    name: str
    description: str
    path: str
    scope: str


@dataclass(frozen=True, slots=True)
class SkillDiscovery:
    """Everything found under the roots, for one principal."""

    skills: tuple[Skill, ...]
    """The winning skill of each name, by name."""
    problems: tuple[SkillProblem, ...]
    """Folders with a ``SKILL.md`` that could not be loaded, and why."""
    shadowed: tuple[str, ...]
    """Folders not looked at because a skill of the same name was found under an earlier root."""


@dataclass(frozen=True, slots=True)
class SkillMatch:
    """A skill that answers a search."""

    name: str
    description: str
    path: str
    scope: str
    score: float
    snippet: str = ""
    """The best matching passage when the search went through the index."""


class SkillLibrary:
    """The skills one principal may use, found under ``roots`` (most specific first)."""

    def __init__(
        self,
        workspace: Workspace,
        roots: Iterable[SkillRoot | str | VPath] = ("/skills",),
        *,
        max_skill_bytes: int = DEFAULT_MAX_SKILL_BYTES,
        max_skills: int = 1000,
        index_mode: str = "bm25",
    ) -> None:
        self.workspace = workspace
        self.roots: tuple[SkillRoot, ...] = tuple(
            r if isinstance(r, SkillRoot) else SkillRoot.of(r) for r in roots
        )
        self.max_skill_bytes = max_skill_bytes
        self.max_skills = max_skills
        """Most folders looked at per root (a bound on the work of one discovery)."""
        self.index_mode = index_mode
        """Search mode used when the workspace has an index (``bm25`` works on every index)."""

    @classmethod
    def for_scopes(
        cls, scoped: ScopedWorkspace, folder: str = "skills", **options: Any
    ) -> SkillLibrary:
        """The skills under ``/{folder}`` of each area: thread, then agent, then global."""
        roots = [SkillRoot(area.prefix / folder, area.kind.value) for area in scoped.areas]
        return cls(scoped.workspace, roots, **options)

    # -- discovery -----------------------------------------------------------------------------

    async def discover(self) -> SkillDiscovery:
        """Every skill the principal may see, the problems of the ones it could not load, and
        the folders shadowed by a skill of the same name under an earlier root."""
        winners: dict[str, Skill] = {}
        problems: list[SkillProblem] = []
        shadowed: list[str] = []
        for root in self.roots:
            for folder in await self._folders(root):
                if folder.name in winners:
                    shadowed.append(str(folder))
                    continue
                found = await self._load(folder, root)
                if isinstance(found, Skill):
                    winners[found.name] = found
                elif found is not None:
                    problems.append(found)
        skills = tuple(winners[name] for name in sorted(winners))
        return SkillDiscovery(skills, tuple(problems), tuple(shadowed))

    async def list_skills(self) -> builtins.list[SkillSummary]:
        """Name and description of every skill the principal may use, by name."""
        return [_summary(s) for s in (await self.discover()).skills]

    async def get_skill(self, name: str) -> Skill:
        """The skill called ``name`` (the most specific valid one), body included.

        :class:`SkillNotFoundError` when there is none the principal may see;
        :class:`InvalidSkillError` when the only ones are invalid.
        """
        why = check_skill_name(name)
        if why is not None:
            shown = repr(name[:60]) if isinstance(name, str) else type(name).__name__
            raise SkillNotFoundError(
                f"no skill named {shown} ({why}); call list_skills to see the skills"
            )
        first_problem: SkillProblem | None = None
        for root in self.roots:
            found = await self._load(root.path / name, root)
            if isinstance(found, Skill):
                return found
            if found is not None and first_problem is None:
                first_problem = found
        if first_problem is not None:
            raise InvalidSkillError(
                f"skill {name!r} cannot be loaded: {'; '.join(first_problem.errors)}; "
                "fix its SKILL.md"
            )
        raise SkillNotFoundError(f"no skill named {name!r}; call list_skills to see the skills")

    async def catalog(self, *, max_skills: int = 100) -> str:
        """The compact list of available skills for a system prompt (empty when none)."""
        return format_catalog(await self.list_skills(), max_skills=max_skills)

    # -- search --------------------------------------------------------------------------------

    async def search_skills(self, query: str, *, k: int = 5) -> builtins.list[SkillMatch]:
        """The ``k`` skills that best match ``query``: through the workspace's search index
        when it has one (falling back to keywords when the index knows none of them), else a
        keyword match over names and descriptions."""
        if k < 1 or not query.strip():
            return []
        skills = {s.name: s for s in (await self.discover()).skills}
        if self.workspace.has_index:
            found = await self._search_index(query, k, skills)
            if found:
                return found
        return keyword_matches(query, skills.values(), k)

    async def _search_index(
        self, query: str, k: int, skills: dict[str, Skill]
    ) -> builtins.list[SkillMatch]:
        best: dict[str, SkillMatch] = {}
        for root in self.roots:
            try:
                result = await self.workspace.search(
                    query, mode=self.index_mode, k=k * 4, path=root.path
                )
            except (NotFoundError, ScopeError):
                continue
            for hit in result.hits:
                name = _skill_of(VPath.parse(hit.path), root.path)
                skill = skills.get(name or "")
                if skill is None or skill.path != str(root.path / skill.name):
                    continue  # not a loaded skill, or a shadowed copy of one
                seen = best.get(skill.name)
                if seen is None or hit.score > seen.score:
                    best[skill.name] = SkillMatch(
                        skill.name,
                        skill.description,
                        skill.path,
                        skill.scope,
                        hit.score,
                        hit.snippet,
                    )
        ranked = sorted(best.values(), key=lambda m: (-m.score, m.name))
        return ranked[:k]

    # -- loading -------------------------------------------------------------------------------

    async def _folders(self, root: SkillRoot) -> builtins.list[VPath]:
        try:
            entries = await self.workspace.list(root.path)
        except (*_HIDDEN, NoMountError):
            return []
        return [e.path for e in entries if e.is_dir][: self.max_skills]

    async def _load(self, folder: VPath, root: SkillRoot) -> Skill | SkillProblem | None:
        """The skill in ``folder``, its problem, or ``None`` when there is no ``SKILL.md``
        the principal may see (then the folder is no skill)."""
        md = folder / "SKILL.md"
        ws, cap = self.workspace, self.max_skill_bytes

        def problem(*errors: str) -> SkillProblem:
            return SkillProblem(str(folder), folder.name, root.scope, errors)

        try:
            info = await ws.stat(md)
            if info.is_dir:
                return problem("SKILL.md is a directory, not a file")
            if info.size > cap:
                return problem(_too_big(info.size, cap))
            data = await ws.read_bytes(md, start=0, end=cap + 1)
        except _HIDDEN:
            return None
        except _BROKEN as exc:
            return problem(str(exc))
        if len(data) > cap:
            return problem(_too_big(None, cap))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return problem("SKILL.md is not valid UTF-8")
        parsed = parse_skill_md(text, folder.name)
        if isinstance(parsed, list):
            return problem(*parsed)
        return Skill(
            name=parsed.name,
            description=parsed.description,
            path=str(folder),
            scope=root.scope,
            license=parsed.license,
            compatibility=parsed.compatibility,
            metadata=parsed.metadata,
            allowed_tools=parsed.allowed_tools,
            body=parsed.body,
            body_line=parsed.body_line,
            warnings=parsed.warnings,
            version=info.version,
        )


def format_catalog(skills: Sequence[SkillSummary | Skill], *, max_skills: int = 100) -> str:
    """``<available_skills>`` with one ``<skill name="...">description</skill>`` line each,
    escaped so a description cannot add tags to the prompt; ``""`` when there are none."""
    if not skills:
        return ""
    lines = ["<available_skills>"]
    for skill in skills[:max_skills]:
        description = escape(" ".join(skill.description.split()))
        lines.append(f"<skill name={quoteattr(skill.name)}>{description}</skill>")
    if len(skills) > max_skills:
        lines.append(f'<more count="{len(skills) - max_skills}">use skill_search</more>')
    lines.append("</available_skills>")
    return "\n".join(lines)


def keyword_matches(query: str, skills: Iterable[Skill], k: int) -> builtins.list[SkillMatch]:
    """Skills ranked by the query's words (common English words left out) found in the name
    (2 points) or the description (1 point); a skill with none is left out."""
    words = set(_WORD.findall(query.lower())) - _STOP
    ranked: list[SkillMatch] = []
    for skill in skills:
        name_words = set(skill.name.split("-"))
        text_words = set(_WORD.findall(skill.description.lower()))
        score = sum(2.0 if w in name_words else 1.0 if w in text_words else 0.0 for w in words)
        if score > 0:
            ranked.append(SkillMatch(skill.name, skill.description, skill.path, skill.scope, score))
    ranked.sort(key=lambda m: (-m.score, m.name))
    return ranked[:k]


def _summary(skill: Skill) -> SkillSummary:
    return SkillSummary(skill.name, skill.description, skill.path, skill.scope)


def _skill_of(path: VPath, root: VPath) -> str | None:
    """The name of the skill folder under ``root`` that ``path`` lies in."""
    if not path.is_relative_to(root) or len(path.parts) <= len(root.parts) + 1:
        return None
    return path.parts[len(root.parts)]


def _too_big(size: int | None, cap: int) -> str:
    amount = "" if size is None else f" {size} bytes,"
    return (
        f"SKILL.md is{amount} over the {cap}-byte limit for a skill; move detail into references/"
    )
