"""Errors of the answer workflow's chat-model port: the names of the one remote-error family
(:class:`~bastion.core.errors.RemoteError`) under which the chat model's errors were first
documented; each is that class itself, so ``except ChatUnavailableError`` and ``except
RemoteUnavailableError`` catch the same failures (an embedder's too).

    OperationError
    └── RemoteError = ChatError                  the chat model gave no usable reply
        ├── RemoteUnavailableError = ChatUnavailableError
        ├── RemoteRequestError = ChatRequestError
        └── RemoteResponseError = ChatResponseError   (also a reranker's or judge's bad JSON)

A message never contains an API key, a URL's user info, the prompt or the contexts that were
sent. A misconfigured model (a bad URL, a cross-encoder path that is not a local folder) is a
developer mistake: :class:`~bastion.core.errors.ConfigurationError`.
"""

from __future__ import annotations

from bastion.core.errors import (
    RemoteError,
    RemoteRequestError,
    RemoteResponseError,
    RemoteUnavailableError,
)

__all__ = ["ChatError", "ChatRequestError", "ChatResponseError", "ChatUnavailableError"]

ChatError = RemoteError
ChatUnavailableError = RemoteUnavailableError
ChatRequestError = RemoteRequestError
ChatResponseError = RemoteResponseError
