"""The record of one declared operation, and the one choice of the default search mode.

An operation is declared once (:mod:`bastion.workspace.operations`): its name, a pydantic model
of its parameters (types, defaults, bounds, one short description each), a model of the result
the HTTP API returns, and the errors it may raise. Every front end reads that declaration: the
HTTP endpoints validate their input with the parameter model and their OpenAPI document is
generated from it; the agent tools, the CLI options and the facade's defaults are derived
from it or checked against it (``tests/unit/test_operations.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

from bastion.core.errors import BastionError
from bastion.workspace.modes import MODES, SearchModeName, search_mode

__all__ = [
    "DECLARED",
    "MODES",
    "Operation",
    "Params",
    "Result",
    "SearchModeName",
    "search_mode",
]


class _Declared:
    """The default of a parameter that a front end takes from the declaration."""

    def __repr__(self) -> str:
        return "DECLARED"


DECLARED: Any = _Declared()
"""Written as a tool function's default: "the operation's declared default" (the tool
decorator puts the declared value in its place)."""


class Params(BaseModel):
    """An operation's parameters: unknown names are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Result(BaseModel):
    """An operation's result as the HTTP API returns it (fields not declared are refused, so a
    test that validates real answers finds any drift)."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One operation, as every front end sees it."""

    name: str
    summary: str
    """One line: what it does (the OpenAPI summary)."""
    params: type[Params]
    result: type[BaseModel]
    errors: tuple[type[BastionError], ...] = ()
    """What it may raise (beyond a bad parameter, which every front end reports itself)."""
    facade: tuple[str, ...] = ()
    """The :class:`~bastion.Workspace` methods that carry it (their defaults are the
    declared ones, which a test holds); empty for an operation of the server alone."""
    edge_only: frozenset[str] = frozenset()
    """Parameters no facade method takes (the HTTP read's ``format`` picks the method)."""

    @property
    def fields(self) -> Mapping[str, FieldInfo]:
        return self.params.model_fields

    def field(self, name: str) -> FieldInfo:
        """The declared field ``name`` (:class:`KeyError` naming the operation if none)."""
        try:
            return self.params.model_fields[name]
        except KeyError:
            raise KeyError(f"operation {self.name!r} declares no parameter {name!r}") from None

    def default(self, name: str) -> Any:
        """The declared default of ``name`` (:class:`KeyError` when it is required)."""
        info = self.field(name)
        if info.is_required():
            raise KeyError(f"{self.name}.{name} is required: it has no default")
        return info.default

    def bounds(self, name: str) -> tuple[int | None, int | None]:
        """The declared ``(ge, le)`` of a number (``None`` where unbounded)."""
        low = high = None
        for meta in self.field(name).metadata:
            low = getattr(meta, "ge", low)
            high = getattr(meta, "le", high)
        return low, high
