"""The search filters a caller may pass (``search(..., filter={...})``): their names, their
shape, and their one-line errors. Each is a field of
:class:`~bastion.knowledge.index.models.IndexFilter` of the same name; the declared
operations and the hit checks read this table, so a new filter is a field there, a line
here, and its test in SQL (``_pg_query.py``) — nothing outside this part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from bastion.core.errors import ConfigurationError

__all__ = ["CALLER_FILTERS", "caller_conditions", "described"]

CALLER_FILTERS: Mapping[str, Literal["names", "text"]] = {
    "tags": "names",
    "section": "text",
    "date_from": "text",
    "date_to": "text",
    "doc_ids": "names",
    "classifications": "names",
}
"""Filter name -> its shape: ``names`` (one string or a list of strings, kept as a set) or
``text`` (one string)."""


def described() -> str:
    """The filters' names, for a declared parameter's description."""
    return ", ".join(CALLER_FILTERS)


def caller_conditions(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as :class:`IndexFilter` fields: an unknown name is a
    :class:`ConfigurationError`, a value of the wrong shape a :class:`ValueError` (as a bad
    ``k`` is: one line, never a ``TypeError`` from deep inside the index)."""
    unknown = set(options) - set(CALLER_FILTERS)
    if unknown:
        raise ConfigurationError(
            f"unknown search filter {', '.join(sorted(map(str, unknown)))}; use "
            f"{', '.join(sorted(CALLER_FILTERS))}"
        )
    conditions: dict[str, Any] = {}
    for key, value in options.items():
        if CALLER_FILTERS[key] == "names":
            conditions[key] = _names(key, value)
        elif value is None or isinstance(value, str):
            conditions[key] = value
        else:
            raise ValueError(f"search filter {key} must be a string")
    return conditions


def _names(key: str, value: object) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, list | tuple | set | frozenset) and all(
        isinstance(item, str) for item in value
    ):
        return frozenset(value)
    raise ValueError(f"search filter {key} must be a string or a list of strings")
