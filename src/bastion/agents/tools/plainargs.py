"""Tool arguments checked without building the input model, when they are plain.

A tool call's arguments are usually a small ``dict`` of ASCII strings and small integers. For
those, the checks the input model makes (types, bounds, required and unknown names, defaults)
are a few comparisons; building the pydantic model for them costs about ten times more than
the checks. :class:`PlainArgs` makes the comparisons and answers only when the outcome is
certain; anything else is left to the model (:meth:`bastion.agents.tools.spec.Tool.parse`),
so the values and the errors are always the model's own.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["MAX_INT", "PlainArgs", "PlainField", "plain_field"]

MAX_INT = 2**63 - 1
"""Integer arguments beyond a 64-bit integer are refused: no tool means them, and numbers of
thousands of digits cannot even be written back in an error message."""

_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class PlainField:
    """What an argument accepts without the model: a value of exactly ``kind`` (``str``,
    ``int`` or ``bool``) within the bounds, or ``None`` when ``optional``. ``kind`` is
    ``None`` for an argument of another type: only its absence is handled here."""

    name: str
    kind: type | None
    required: bool
    default: Any
    optional: bool = False
    low: int = -MAX_INT
    high: int = MAX_INT
    min_length: int = 0
    max_length: int | None = None
    choices: frozenset[str] | None = None


class PlainArgs:
    """The input model's checks for plain values, without building the model (much faster
    than ``model_validate`` for a few arguments).

    :meth:`check` answers only when the outcome is certain: every value is exactly a
    ``str`` (ASCII, so no lone surrogate and one character per code point), an ``int`` (not a
    ``bool``) or a ``bool`` that the model would take unchanged, every required argument is
    there and no unknown one; the absent ones take their defaults, as the model gives them
    (defaults are not validated). Anything else (a string of digits for an integer, a value
    out of bounds, a float, a non-ASCII string) returns ``None``, and the model decides:
    the values or the error are then the model's own. Made only for a model with
    ``extra="forbid"``, no validators and arguments whose defaults are plain constants."""

    def __init__(self, fields: tuple[PlainField, ...]) -> None:
        self.fields = fields
        self.names = frozenset(f.name for f in fields)

    @classmethod
    def of(cls, model: type[BaseModel]) -> PlainArgs | None:
        """The plain checks of ``model``, or ``None`` when it has anything they do not
        cover (a configuration or a validator of its own, a default made by a factory)."""
        decorators = model.__pydantic_decorators__
        if dict(model.model_config) != {"extra": "forbid"} or any(
            (
                decorators.validators,
                decorators.field_validators,
                decorators.root_validators,
                decorators.model_validators,
            )
        ):
            return None
        fields = []
        for name, info in model.model_fields.items():
            plain = plain_field(name, info)
            if plain is None:
                return None
            fields.append(plain)
        return cls(tuple(fields))

    def check(self, arguments: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The validated values of plain ``arguments``, or ``None`` (let the model decide)."""
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict or not arguments.keys() <= self.names:
            return None
        values: dict[str, Any] = {}
        for f in self.fields:
            value = arguments.get(f.name, _ABSENT)
            if value is _ABSENT:
                if f.required:
                    return None
                value = f.default
            elif value is None:
                if not f.optional:
                    return None
            elif (kind := type(value)) is not f.kind:
                return None
            elif kind is str:
                if not value.isascii() or len(value) < f.min_length:
                    return None
                if f.max_length is not None and len(value) > f.max_length:
                    return None
                if f.choices is not None and value not in f.choices:
                    return None
            elif kind is int and not f.low <= value <= f.high:
                return None
            values[f.name] = value
        return values


def plain_field(name: str, info: FieldInfo) -> PlainField | None:
    """How ``info`` is checked for plain values; ``None`` when its default is not a
    plain constant (then the model always decides)."""
    default = info.default
    required = info.is_required()
    if info.default_factory is not None or not (
        required or default is None or type(default) in (str, int, bool)
    ):
        return None
    absent_only = PlainField(name, None, required, default)
    annotation: Any = info.annotation
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) != 1 or len(members) == len(get_args(annotation)):
            return absent_only
        annotation, optional = members[0], True
    choices: frozenset[str] | None = None
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        if not all(type(v) is str for v in values):
            return absent_only
        annotation, choices = str, frozenset(values)
    if annotation not in (str, int, bool):
        return absent_only
    bounds: dict[str, Any] = {}
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge) and annotation is int and type(meta.ge) is int:
            bounds["low"] = max(meta.ge, -MAX_INT)
        elif isinstance(meta, annotated_types.Le) and annotation is int and type(meta.le) is int:
            bounds["high"] = min(meta.le, MAX_INT)
        elif isinstance(meta, annotated_types.MinLen) and annotation is str:
            bounds["min_length"] = meta.min_length
        elif isinstance(meta, annotated_types.MaxLen) and annotation is str:
            bounds["max_length"] = meta.max_length
        else:  # a bound or a validator the plain checks do not know
            return absent_only
    return PlainField(
        name, annotation, required, default, optional=optional, choices=choices, **bounds
    )
