"""Errors raised by embedders.

Agent-facing (:class:`~bastion.core.errors.OperationError`): one line that says what failed
and what to do next. A message never contains an API key, a URL's user info or the texts that
were being embedded.

    OperationError
    └── EmbeddingError                 the texts could not be embedded
        ├── EmbeddingUnavailableError  the service did not answer usefully in time, after bounded
        │                              retries (429, 5xx, timeout, connection refused)
        ├── EmbeddingRequestError      the service refused the request (401, 403, 404, 400...)
        └── EmbeddingResponseError     the reply was not a valid embeddings response

A missing or unusable local model is a developer mistake and raises
:class:`~bastion.core.errors.ConfigurationError` when the embedder is built or first used.
"""

from __future__ import annotations

from bastion.core.errors import OperationError

__all__ = [
    "EmbeddingError",
    "EmbeddingRequestError",
    "EmbeddingResponseError",
    "EmbeddingUnavailableError",
]


class EmbeddingError(OperationError):
    """The texts could not be embedded."""

    status: int | None
    """The HTTP status of the last reply, when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EmbeddingUnavailableError(EmbeddingError):
    """The service stayed unavailable (429, 5xx, timeout, refused) through every retry."""


class EmbeddingRequestError(EmbeddingError):
    """The service refused the request; retrying the same request will not help."""


class EmbeddingResponseError(EmbeddingError):
    """The reply was not a valid embeddings response (bad JSON, wrong count or dimension)."""
