"""Approval of a command's effects: each change it made is shown to a reviewer before it is
written back, and a change the reviewer refuses stays out (reported per path, like a change
the guard refuses).

A command's text says little about what it does (``r{m,x}``, a line continuation, an alias, a
script, input sent later to a shell), so approval that matters is asked here, on what the
command actually changed: the sandbox diffs the view after the command, and every created,
changed or deleted path passes :data:`Review` before the guarded write-back. The agents'
:class:`~bastion.agents.tools.Approval` builds its reviewer from its path rules
(``docs/sandbox.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from bastion.sandbox.view import Change

__all__ = ["Effect", "Review", "screen"]

log = logging.getLogger(__name__)

_Kind = Literal["write", "delete", "mkdir"]


@dataclass(frozen=True, slots=True)
class Effect:
    """One change a command made, as the reviewer sees it."""

    path: str
    """The workspace path."""
    kind: _Kind
    """``write``: a file created or changed; ``delete``: a file or folder removed;
    ``mkdir``: a folder created."""


Review = Callable[[Effect], Awaitable[str | None]]
"""Called once per change before it is written back: ``None`` to let it through, or the
one-line reason it is refused (the change is then not applied)."""

_KINDS: dict[str, _Kind] = {"write": "write", "delete": "delete", "mkdir": "mkdir"}
_FAILED = "not written back: the approval check failed; ask the user"


async def screen(changes: list[Change], review: Review | None) -> list[Change]:
    """``changes`` with each one ``review`` refuses turned into a refusal carrying its reason.
    A reviewer that raises refuses (fails closed)."""
    if review is None:
        return changes
    screened: list[Change] = []
    for change in changes:
        kind = _KINDS.get(change.kind)
        if kind is None:  # refused already
            screened.append(change)
            continue
        effect = Effect(str(change.path), kind)
        try:
            reason = await review(effect)
        except Exception:
            log.warning("the change reviewer failed on %s", effect.path, exc_info=True)
            reason = _FAILED
        if reason is None:
            screened.append(change)
        else:
            screened.append(Change(change.path, "refuse", shown=change.shown, reason=reason))
    return screened
