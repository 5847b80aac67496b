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
    debug with ``-v``."""
    if quiet:
        return logging.ERROR
    return logging.DEBUG if verbose else logging.INFO


def configure(log_format: str, level: int) -> Callable[[], None]:
    """Send every log line to stderr in ``log_format`` (``"text"`` or ``"json"``) from
    ``level`` up; the returned function undoes it."""
    handler = logging.StreamHandler()
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)

    def undo() -> None:
        root.removeHandler(handler)
        root.setLevel(before)
        logging.captureWarnings(False)

    return undo
