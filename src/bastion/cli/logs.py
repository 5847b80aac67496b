"""Log lines of a command: Bastion's and third-party libraries' (pypdf's complaints about a
broken PDF and the like), and Python warnings, all through ``logging`` to stderr; never
printed raw."""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["configure_logging", "reset_logging"]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now (a test runner swaps it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        return None


_HANDLER = _Stderr()
_HANDLER.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
_LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)
_ROOT_LEVEL: list[int] = []
"""The root logger's level before the command, restored after it."""


def configure_logging(verbose: int, quiet: bool) -> None:
    """Log lines (ours and third-party libraries', pypdf's warnings included) go to stderr:
    warnings by default, info with ``-v``, debug with ``-vv``, errors only with ``-q``.
    Python warnings are routed to logging too, never printed raw."""
    logging.captureWarnings(True)
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        _ROOT_LEVEL[:] = [root.level]
        root.addHandler(_HANDLER)
    _HANDLER.setLevel(logging.ERROR if quiet else _LEVELS[min(verbose, 2)])
    root.setLevel(min(root.level or logging.WARNING, _HANDLER.level))


def reset_logging() -> None:
    """Take the command's log handler off again (a test runs many commands in one process)."""
    root = logging.getLogger()
    if _HANDLER in root.handlers:
        root.removeHandler(_HANDLER)
        root.setLevel(_ROOT_LEVEL[0] if _ROOT_LEVEL else logging.WARNING)
    logging.captureWarnings(False)
