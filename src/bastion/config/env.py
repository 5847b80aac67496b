"""What every table of the workspace file shares: ``${VARIABLE}`` expansion and the check
for unknown keys (a key of the old ``bastion mcp`` file says where it went)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.core.schema import check_keys, list_of_names

__all__ = ["expand_env", "names", "unknown"]

_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MOVED = {
    "index": '"index" is now [knowledge] folder = "..."',
    "keyword_only": '"keyword_only" is now [knowledge] embedder = "none"',
    "path": 'a mount\'s "path" is now url = "file:FOLDER" (or "memory://")',
}
"""Keys of the old ``bastion mcp`` file, with where they went (said once in the error)."""


def expand_env(value: Any, env: Mapping[str, str], where: str) -> Any:
    """``value`` with ``${NAME}`` / ``${NAME:-default}`` replaced in every string, through
    lists and tables. ``where`` names the place for the error of a missing variable."""
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigurationError(
                f"{where}: environment variable {name} is not set; set it or write "
                f"${{{name}:-default}}"
            )

        return _VARIABLE.sub(replace, value)
    if isinstance(value, list):
        return [expand_env(item, env, where) for item in value]
    if isinstance(value, dict):
        return {key: expand_env(item, env, where) for key, item in value.items()}
    return value


def unknown(data: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Unknown keys are an error; a key of the old ``bastion mcp`` file says where it went."""
    try:
        check_keys(data, known, where)
    except ConfigurationError as exc:
        moved = [_MOVED[k] for k in _MOVED if k in data and k not in known]
        raise ConfigurationError("; ".join((str(exc), *moved))) from None


def names(value: Any, what: str, where: str) -> frozenset[str]:
    return frozenset(list_of_names(value, f"{where}: {what}"))
