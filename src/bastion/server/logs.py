"""``bastion serve``'s log lines on stderr: text or one JSON object per line.

Every record carries the id of the request it was written for (``-`` outside any,
:class:`~bastion.server.metrics.RequestIdFilter`); a request's own line
(:class:`~bastion.server.middleware.AccessLog`) carries its method, path, status, duration and
principal subject too. uvicorn's lines and Python warnings go the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bastion.server.metrics import JsonFormatter, RequestIdFilter

__all__ = ["TEXT_FORMAT", "configure", "level_for"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def level_for(verbose: int, quiet: bool) -> int:
    """The server's level: its request lines (info) by default, errors only with ``-q``,
    Bastion's debug lines with ``-v``."""
    if quiet:
        return logging.ERROR
    return logging.DEBUG if verbose else logging.INFO


def configure(log_format: str, level: int) -> Callable[[], None]:
    """Send every log line to stderr in ``log_format`` (``"text"`` or ``"json"``) from
    ``level`` up; the returned function undoes it. Other libraries' debug lines are never
    written (the MCP and event-stream libraries quote what they send at that level)."""
    handler = logging.StreamHandler()
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    handler.setLevel(level)  # uvicorn's loggers keep levels of their own
    root, ours = logging.getLogger(), logging.getLogger("bastion")
    before = root.level, ours.level
    root.addHandler(handler)
    root.setLevel(max(level, logging.INFO))
    ours.setLevel(level)
    logging.captureWarnings(True)

    def undo() -> None:
        root.removeHandler(handler)
        root.setLevel(before[0])
        ours.setLevel(before[1])
        logging.captureWarnings(False)

    return undo
