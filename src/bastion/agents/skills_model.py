"""What a skill is, and how its ``SKILL.md`` is checked (pure functions, no I/O).

A skill is a folder holding ``SKILL.md``: YAML front matter between ``---`` lines, then a
Markdown body, with optional ``references/``, ``scripts/`` and ``assets/`` beside it. The front
matter is validated as the Agent Skills specification (agentskills.io) says:

* ``name`` (required): 1-64 characters, lowercase ASCII letters, digits and hyphens, no
  leading, trailing or consecutive hyphen, equal to the folder's name;
* ``description`` (required): non-empty, at most 1024 characters;
* ``license`` (optional): a string;
* ``compatibility`` (optional): 1-500 characters;
* ``metadata`` (optional): a map of string keys to string values;
* ``allowed-tools`` (optional): a space-separated string of tool names (a list is accepted).

Any other field is reported as a warning and the skill still loads; anything invalid makes the
skill a :class:`SkillProblem`, reported and not loaded. Messages name fields and limits, never
the file's content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bastion.core.errors import NotFoundError, OperationError
from bastion.labels.frontmatter import FrontMatterError, split_front_matter

__all__ = [
    "KNOWN_FIELDS",
    "MAX_COMPATIBILITY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FLOW_DEPTH",
    "MAX_FRONT_MATTER_BYTES",
    "MAX_NAME_CHARS",
    "FrontMatter",
    "InvalidSkillError",
    "Skill",
    "SkillNotFoundError",
    "SkillProblem",
    "check_skill_name",
    "parse_skill_md",
]

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_FRONT_MATTER_BYTES = 16 * 1024
"""Front matter is a few short fields; a bigger block is refused before YAML reads it."""
MAX_FLOW_DEPTH = 16
"""Most ``[``/``{`` nesting read: YAML parsers take superlinear time on deep nesting."""
KNOWN_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_EMPTY: Mapping[str, str] = MappingProxyType({})


class SkillNotFoundError(NotFoundError):
    """No skill of that name that the caller may see."""


class InvalidSkillError(OperationError):
    """A skill of that name exists but its ``SKILL.md`` is invalid; the message says why."""


def check_skill_name(name: object) -> str | None:
    """Why ``name`` is not a valid skill name, or ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return "name must be a non-empty string"
    if len(name) > MAX_NAME_CHARS:
        return f"name is {len(name)} characters, over the {MAX_NAME_CHARS}-character limit"
    if name != name.lower():
        return "name must be lowercase"
    if not _NAME.fullmatch(name):
        if name.startswith("-") or name.endswith("-"):
            return "name must not start or end with a hyphen"
        if "--" in name:
            return "name must not contain consecutive hyphens"
        return "name may hold only lowercase letters, digits and hyphens"
    return None


@dataclass(frozen=True, kw_only=True)
class FrontMatter:
    """The validated front matter of one ``SKILL.md``."""

    name: str
    description: str
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    allowed_tools: tuple[str, ...] = ()
    body: str = ""
    """The Markdown after the front matter."""
    body_line: int = 1
    """Line of ``SKILL.md`` on which the body starts (1-based)."""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Skill:
    """A loaded, valid skill as one principal sees it."""

    name: str
    description: str
    path: str
    """Workspace path of the skill's folder."""
    scope: str
    """Where it was found: ``thread``, ``agent``, ``global``, or the root folder's path."""
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    allowed_tools: tuple[str, ...] = ()
    body: str = field(default="", repr=False)
    body_line: int = 1
    warnings: tuple[str, ...] = ()
    version: str | None = None
    """Version of ``SKILL.md`` when it was read."""

    @property
    def skill_md(self) -> str:
        return f"{self.path}/SKILL.md"


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A folder that looks like a skill but cannot be loaded, and why."""

    path: str
    """Workspace path of the folder."""
    name: str
    """The folder's name."""
    scope: str
    errors: tuple[str, ...]

    def format(self) -> str:
        return f"{self.path}: " + "; ".join(self.errors)


def parse_skill_md(text: str, folder_name: str) -> FrontMatter | list[str]:
    """The validated front matter and body of a ``SKILL.md``, or the list of what is wrong.
    Front matter is read by the project's one parser (``bastion.labels.frontmatter``)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    try:
        found = split_front_matter(
            text, "SKILL.md", max_bytes=MAX_FRONT_MATTER_BYTES, max_depth=MAX_FLOW_DEPTH
        )
    except FrontMatterError as exc:
        return [exc.reason if exc.reason is not None else str(exc)]
    if found is None:
        return ["SKILL.md must start with YAML front matter between '---' lines"]
    return _validate(found.metadata, folder_name, text[found.end :], found.body_line)


def _validate(
    data: dict[Any, Any], folder: str, body: str, body_line: int
) -> FrontMatter | list[str]:
    errors: list[str] = []
    warnings: list[str] = []
    unknown = sorted(str(key) for key in data if key not in KNOWN_FIELDS)
    if unknown:
        shown = ", ".join(_clip(u, 40) for u in unknown[:10])
        warnings.append(f"unknown front matter fields ignored: {shown}")

    name = data.get("name")
    if name is None:
        errors.append("name is required")
    else:
        why = check_skill_name(name)
        if why is not None:
            errors.append(why)
        elif name != folder:
            errors.append(f"name {name!r} must equal the folder's name")

    description = data.get("description")
    if description is None:
        errors.append("description is required")
    elif not isinstance(description, str) or not description.strip():
        errors.append("description must be a non-empty string")
    elif len(description) > MAX_DESCRIPTION_CHARS:
        errors.append(
            f"description is {len(description)} characters, over the "
            f"{MAX_DESCRIPTION_CHARS}-character limit"
        )

    license_ = data.get("license")
    if license_ is not None and not isinstance(license_, str):
        errors.append("license must be a string")

    compatibility = data.get("compatibility")
    if compatibility is not None:
        if not isinstance(compatibility, str) or not compatibility.strip():
            errors.append("compatibility must be a non-empty string")
        elif len(compatibility) > MAX_COMPATIBILITY_CHARS:
            errors.append(
                f"compatibility is {len(compatibility)} characters, over the "
                f"{MAX_COMPATIBILITY_CHARS}-character limit"
            )

    metadata = _metadata(data.get("metadata"), errors, warnings)
    tools = _tools(data.get("allowed-tools"), errors)
    if errors:
        return errors
    assert isinstance(name, str) and isinstance(description, str)
    return FrontMatter(
        name=name,
        description=description.strip(),
        license=license_,
        compatibility=compatibility,
        metadata=metadata,
        allowed_tools=tools,
        body=body,
        body_line=body_line,
        warnings=tuple(warnings),
    )


def _metadata(raw: object, errors: list[str], warnings: list[str]) -> Mapping[str, str]:
    """String keys to string values. Numbers and booleans are turned into strings (YAML reads
    ``version: 1.0`` as a number) with a warning; lists and maps are refused."""
    if raw is None:
        return _EMPTY
    if not isinstance(raw, dict):
        errors.append("metadata must be a mapping of string keys to string values")
        return _EMPTY
    out: dict[str, str] = {}
    converted: list[str] = []
    for key, value in raw.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool | int | float):
            out[key] = str(value).lower() if isinstance(value, bool) else str(value)
            converted.append(_clip(key, 40))
        else:
            errors.append(f"metadata.{_clip(key, 40)} must be a string")
    if converted:
        warnings.append(f"metadata values read as strings (quote them): {', '.join(converted)}")
    return MappingProxyType(out)


def _tools(raw: object, errors: list[str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return tuple(raw.split())
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return tuple(item for item in raw if item.strip())
    errors.append("allowed-tools must be a space-separated string of tool names")
    return ()


def _clip(text: str, limit: int) -> str:
    cleaned = "".join(ch if ch.isprintable() else "?" for ch in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."
