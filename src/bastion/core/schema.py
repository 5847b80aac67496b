"""Checks for configuration data (what a TOML or YAML file holds): every field has the type it
promises, or a one-line :class:`ConfigurationError` names the field and the type it wants.

One function per kind of value, shared by the workspace file, the policy and the identity
configuration, so that a string is never taken for a list anywhere: iterating ``"mallory"``
gives ``m``, ``a``, ``l``..., and a deny rule for those principals would skip its target.
``where`` is the place in the file (``policy rule 2``); the file itself is named by the loader.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from bastion.core.errors import ConfigurationError

__all__ = [
    "check_keys",
    "list_of_names",
    "list_of_tables",
    "name",
    "number",
    "positive_int",
    "show",
    "table",
    "text",
]


def show(key: object) -> str:
    """A key as an error shows it: plain names as they are, anything else quoted (one line)."""
    if isinstance(key, str) and key.isprintable() and key and len(key) <= 64:
        return key
    shown = ascii(key)
    return shown if len(shown) <= 64 else shown[:61] + "..."


def _kind(value: object) -> str:
    """What a value is, in the words of a TOML or YAML file."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple | set | frozenset):
        return "a list"
    return type(value).__name__


def check_keys(data: Mapping[Any, Any], known: Iterable[str], where: str) -> None:
    """Refuse keys outside ``known``, naming them; nothing is ever silently dropped."""
    allowed = set(known)
    extra = sorted(show(key) for key in data if key not in allowed)
    if extra:
        raise ConfigurationError(
            f"{where}: unknown keys {', '.join(extra)}; known: {', '.join(sorted(allowed))}"
        )


def table(value: object, where: str) -> Mapping[str, Any]:
    """A table (TOML ``[table]`` or inline ``{...}``, a YAML mapping)."""
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{where} must be a table, not {_kind(value)}")
    return value


def list_of_tables(value: object, where: str) -> list[Mapping[str, Any]]:
    """A list of tables (TOML ``[[name]]``, a YAML list of mappings)."""
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ConfigurationError(f"{where} must be a list of tables ([[...]]), not {_kind(value)}")
    return value


def name(value: object, where: str) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise ConfigurationError(
            f'{where} must be a non-empty string such as "x", not {_kind(value)}'
        )
    return value


def text(value: object, where: str) -> str:
    """A string, possibly empty."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{where} must be a string, not {_kind(value)}")
    return value


def list_of_names(
    value: object, where: str, *, allow_empty: bool = False, noun: str = "names"
) -> tuple[str, ...]:
    """A list of non-empty strings. A lone string is refused: ``roles = "hr"`` must be
    written ``roles = ["hr"]`` (taken as a list it would be the roles ``h`` and ``r``)."""
    if isinstance(value, str):
        raise ConfigurationError(
            f'{where} must be a list of {noun} such as ["{show(value)}"], not a string'
        )
    if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise ConfigurationError(f"{where} must be a list of {noun}, not {_kind(value)}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise ConfigurationError(f"{where} must be a list of {noun}; one item is {_kind(item)}")
        if not item and not allow_empty:
            raise ConfigurationError(f"{where} must be a list of {noun}; one item is empty")
    return items


def positive_int(value: object, where: str) -> int:
    """A whole number of at least 1 (``true`` is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{where} must be a whole number of at least 1")
    return value


def number(value: object, where: str) -> float:
    """A finite number above zero (``true`` is not a number)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not value > 0
    ):
        raise ConfigurationError(f"{where} must be a number above 0")
    return float(value)
