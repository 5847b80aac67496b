"""Errors as JSON: one status and one stable code per class of the error tree.

``{"error": {"code": "not_found", "message": "/docs/x.md not found"}}``. A document the
principal may not see is a ``not_found`` exactly like a missing one (the workspace words both
the same; nothing here tells them apart). A scope or policy refusal is a ``403``, a stale
writer a ``409``, a limit ``413`` and a rate limit ``429``; a store that did not answer is a
``503`` whose message names the mount. Anything else is a ``500`` with a fixed message: no
stack trace, exception text or store path ever reaches a response.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    BastionError,
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    EditError,
    InvalidPathError,
    InvalidPatternError,
    IsADirectoryError_,
    LabelError,
    LimitError,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    RateLimitError,
    ScopeError,
    StoreError,
    StoreUnavailableError,
    UnsupportedFileError,
)
from bastion.governance.errors import AuthenticationError

__all__ = [
    "ApiError",
    "BodyTooLargeError",
    "describe",
    "error_response",
    "status_for",
    "status_of",
]

log = logging.getLogger("bastion.server")

_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    # most specific first; the code is the error's own (``bastion.core.errors``: one table
    # for the command line and the API)
    (AuthenticationError, 401),
    (NotFoundError, 404),
    (InvalidPathError, 400),
    (InvalidPatternError, 400),
    (AlreadyExistsError, 409),
    (ConflictError, 409),
    (DirectoryNotEmptyError, 409),
    (NotADirectoryError_, 409),
    (IsADirectoryError_, 409),
    (EditError, 422),
    (LabelError, 422),
    (UnsupportedFileError, 422),
    (ScopeError, 403),
    (PolicyDeniedError, 403),
    (LimitError, 413),
    (AccessDeniedError, 403),
    (RateLimitError, 429),
    (StoreUnavailableError, 503),
    (StoreError, 502),
    (ConfigurationError, 409),
    (OperationError, 400),
)


class ApiError(Exception):
    """An error of the HTTP layer itself (a bad parameter, a missing field)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class BodyTooLargeError(ApiError):
    """The request body grew past its limit while it was being read."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413, "body_too_large", f"request body is over the {limit}-byte limit; send less"
        )


def status_for(cls: type[BaseException]) -> int:
    """The HTTP status of an error class (what :func:`status_of` gives its instances)."""
    if issubclass(cls, BastionError):
        return next((status for known, status in _STATUS if issubclass(cls, known)), 400)
    return 500


_ROUTING = {
    404: ("not_found", "no such endpoint; the API is under /v1 (see /openapi.json)"),
    405: ("method_not_allowed", "this endpoint does not take that method (see /openapi.json)"),
}
"""Starlette's own refusals (no route, wrong method, a static file that is not there), each
with a fixed line: the exception's text is never shown."""


def status_of(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and stable code of one exception."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code
    if isinstance(exc, HTTPException) and 400 <= exc.status_code < 500:
        code = _ROUTING.get(exc.status_code, ("bad_request", ""))[0]
        return exc.status_code, code
    if isinstance(exc, BastionError):
        status = next((status for cls, status in _STATUS if isinstance(exc, cls)), 400)
        return status, exc.code
    if isinstance(exc, ValueError):
        return 400, "bad_argument"
    return 500, "internal"


def describe(exc: BaseException) -> tuple[int, str, str]:
    """Status, code and the one-line message a client may see; an unexpected exception is
    logged by type only."""
    status, code = status_of(exc)
    if status == 500:
        log.error("unexpected %s while serving a request", type(exc).__name__)
        message = "internal error; the server log has the exception type"
    elif isinstance(exc, ConfigurationError):
        message = (
            "this server is not set up for that request "
            "(a search mode or an index it does not have)"
        )
    elif isinstance(exc, ValueError):
        message = "an argument is out of range; check the request's parameters"
    elif isinstance(exc, BastionError | ApiError):
        message = str(exc) or code  # one line: the error root escapes line breaks
    elif isinstance(exc, HTTPException):
        message = _ROUTING.get(status, ("", "the request was refused; check it"))[1]
    else:  # pragma: no cover - every mapped class is one of the above
        message = code
    return status, code, message


def error_response(exc: BaseException, *, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON response for ``exc``."""
    status, code, message = describe(exc)
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    extra = dict(headers or {})
    if isinstance(exc, HTTPException) and status < 500:
        extra.update({k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"})
    if status == 401:
        extra.setdefault("WWW-Authenticate", 'Bearer realm="bastion"')
    if status == 429:
        extra.setdefault("Retry-After", "1")
    return JSONResponse(body, status_code=status, headers=extra)
