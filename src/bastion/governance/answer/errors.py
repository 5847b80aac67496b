"""Errors of the answer workflow's chat-model port.

Agent-facing (:class:`~bastion.core.errors.OperationError`): one line that says what failed and
what to do next. A message never contains an API key, a URL's user info, the prompt or the
contexts that were sent.

    OperationError
    └── ChatError                  the chat model gave no usable reply
        ├── ChatUnavailableError   no useful answer in time after bounded retries (429, 5xx,
        │                          timeout, connection refused, a stream cut short)
        ├── ChatRequestError       the service refused the request (401, 403, 404, 400...)
        └── ChatResponseError      the reply was not a valid chat completion (or, for a
                                   reranker or judge, not the JSON it was asked for)

A misconfigured model (a bad URL, a cross-encoder path that is not a local folder) is a
developer mistake: :class:`~bastion.core.errors.ConfigurationError`.
"""

from __future__ import annotations

from bastion.core.errors import OperationError

__all__ = ["ChatError", "ChatRequestError", "ChatResponseError", "ChatUnavailableError"]


class ChatError(OperationError):
    """The chat model gave no usable reply."""

    status: int | None
    """The HTTP status of the last reply, when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ChatUnavailableError(ChatError):
    """The service stayed unavailable (429, 5xx, timeout, refused) through every retry."""


class ChatRequestError(ChatError):
    """The service refused the request; retrying the same request will not help."""


class ChatResponseError(ChatError):
    """The reply was not what was asked for (invalid JSON, no choices, a broken stream)."""
