"""Every operation, declared once: name, parameters (types, defaults, bounds), result and
errors, as pydantic models (:class:`Operation`).

The front ends derive from these declarations: the HTTP endpoints and their OpenAPI document
(``bastion.server``), the agent tools' arguments (``bastion.agents.tools``), the CLI options
(``bastion.cli``); the :class:`~bastion.Workspace` methods' defaults are held to them by a test.
The default search mode is chosen in one function, :func:`search_mode`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from bastion.workspace.operations.base import (
    DECLARED,
    MODES,
    Operation,
    Params,
    Result,
    SearchModeName,
    search_mode,
)
from bastion.workspace.operations.changes import CHANGE_OPERATIONS
from bastion.workspace.operations.files import FILE_OPERATIONS, MAX_ENTRIES, Entry
from bastion.workspace.operations.knowledge import KNOWLEDGE_OPERATIONS, MAX_K, MAX_QUESTION
from bastion.workspace.operations.overlay import OVERLAY_OPERATIONS
from bastion.workspace.operations.service import MAX_STDIN, SERVICE_OPERATIONS
from bastion.workspace.operations.web import WEB_OPERATIONS

__all__ = [
    "DECLARED",
    "MAX_ENTRIES",
    "MAX_K",
    "MAX_QUESTION",
    "MAX_STDIN",
    "MODES",
    "OPERATIONS",
    "Entry",
    "Operation",
    "Params",
    "Result",
    "SearchModeName",
    "operation",
    "search_mode",
]

OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {
        op.name: op
        for op in (
            *FILE_OPERATIONS,
            *KNOWLEDGE_OPERATIONS,
            *SERVICE_OPERATIONS,
            *CHANGE_OPERATIONS,
            *OVERLAY_OPERATIONS,
            *WEB_OPERATIONS,
        )
    }
)
"""Every declared operation by name."""


def operation(name: str) -> Operation:
    """The declared operation ``name`` (:class:`KeyError` naming the known ones)."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise KeyError(f"no operation {name!r}; declared: {', '.join(OPERATIONS)}") from None
