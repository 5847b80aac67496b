"""The one reader of configuration files: TOML or YAML, chosen by one suffix rule.

Every file Bastion reads as settings (the workspace file, a policy file, a users file, an
identity file, the server's tables) goes through :func:`read_table`, so they all accept the
same names and fail the same way: ``.toml`` is TOML, ``.yaml`` and ``.yml`` are YAML (any
case), anything else is refused. An empty YAML file is an empty table, as an empty TOML file
is. Every failure is one :class:`~bastion.core.errors.ConfigurationError` line naming the file;
it never quotes the file's text (a YAML error would quote the offending line, which may hold an
inline secret), only what is wrong and where.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml

from bastion.core.errors import ConfigurationError

__all__ = ["SUFFIXES", "Format", "file_format", "read_table"]

Format = Literal["TOML", "YAML"]

SUFFIXES: dict[str, Format] = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML"}
"""The suffix rule: a file's lower-cased suffix -> the format it is read as."""


def file_format(path: str | os.PathLike[str], what: str = "configuration file") -> Format:
    """The format ``path`` is read as, by its suffix; a ``ConfigurationError`` for any other."""
    file = Path(path)
    found = SUFFIXES.get(file.suffix.lower())
    if found is None:
        raise ConfigurationError(f"{what} {file} must end in .toml, .yaml or .yml")
    return found


def read_table(
    path: str | os.PathLike[str],
    what: str = "configuration file",
    *,
    fmt: Format | None = None,
) -> dict[str, Any]:
    """The top-level table of the TOML or YAML file at ``path``. ``what`` names the file in
    errors (``"workspace file"``, ``"policy file"``...); ``fmt`` reads it as that format
    whatever its suffix (``WorkspaceConfig.from_toml``), else the suffix decides."""
    file = Path(path)
    kind = fmt or file_format(file, what)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"{what} {file} is not valid {kind}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot read {what} {file}: {exc.strerror or exc}") from None
    try:
        data: object = tomllib.loads(text) if kind == "TOML" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"{what} {file} is not valid {kind}: {_why(exc)}") from None
    if data is None and kind == "YAML":  # an empty YAML document
        data = {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{what} {file} must be a table at the top level")
    return data


def _why(exc: Exception) -> str:
    """What is wrong, in one line and without the file's text: only a YAML error's problem
    and place are kept (it quotes the offending line); a TOML error says only where."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem or 'syntax error'} (line {mark.line + 1}, column {mark.column + 1})"
    if isinstance(exc, yaml.YAMLError):
        return "syntax error"
    return " ".join(str(exc).split())
