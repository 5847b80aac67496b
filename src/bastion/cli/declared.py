"""Command-line options made from the declared operations (:mod:`bastion.workspace.operations`).

``declared_option("search", "k", "-k")`` is a click option whose type, bounds, choices,
default and help are the declared parameter's: an integer with bounds becomes an
``IntRange``, a ``Literal`` a ``Choice``, a boolean a flag. The option remembers what it was
made from (:class:`DeclaredOption`), so a test can find every one and hold it to its
declaration.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click

from bastion.workspace.operations import operation

__all__ = ["DeclaredOption", "declared_option"]

F = TypeVar("F", bound=Callable[..., Any])


class DeclaredOption(click.Option):
    """A click option of a declared parameter (``source``: ``"operation.parameter"``)."""

    def __init__(self, *args: Any, source: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source


def _plain(annotation: Any) -> Any:
    """``X`` of ``X | None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def click_type(op_name: str, name: str) -> Any:
    """The click type of a declared parameter."""
    op = operation(op_name)
    annotation = _plain(op.field(name).annotation)
    if get_origin(annotation) is Literal:
        return click.Choice([str(v) for v in get_args(annotation)])
    low, high = op.bounds(name)
    if annotation is int:
        return click.IntRange(low, high) if (low, high) != (None, None) else click.INT
    if annotation is float:
        return click.FloatRange(low, high) if (low, high) != (None, None) else click.FLOAT
    if annotation is bool:
        return click.BOOL
    return click.STRING


def declared_option(op_name: str, name: str, *decls: str, **overrides: Any) -> Callable[[F], F]:
    """A click option for the declared parameter ``name`` of ``op_name``; ``decls`` are its
    flags (and python name), ``overrides`` anything else click takes (``help``, ``metavar``).
    Type, default and bounds are never overridden: they are the declaration's."""
    op = operation(op_name)
    info = op.field(name)
    default = None if info.is_required() else info.default
    kind = click_type(op_name, name)
    options: dict[str, Any] = {
        "cls": DeclaredOption,
        "source": f"{op_name}.{name}",
        "default": default,
        "help": info.description,
        "show_default": default not in (None, False),
    }
    if kind is click.BOOL:
        options["is_flag"] = True
    else:
        options["type"] = kind
    for key in ("type", "default", "is_flag", "cls", "source"):
        if key in overrides:
            raise TypeError(f"{key} of --{name} is the declaration's ({op_name}.{name})")
    options.update(overrides)
    return click.option(*decls, **options)
