"""Errors raised by embedders: the names of the one remote-error family
(:class:`~bastion.core.errors.RemoteError`) under which the embedder's errors are documented
(``docs/embeddings.md``); each is that class itself.

    OperationError
    └── RemoteError = EmbeddingError                 the texts could not be embedded
        ├── RemoteUnavailableError = EmbeddingUnavailableError   429 / 5xx / timeout / refused
        ├── RemoteRequestError = EmbeddingRequestError           refused (401, 403, 404, 400...)
        └── RemoteResponseError = EmbeddingResponseError         not a valid embeddings reply

A message never contains an API key, a URL's user info or the texts that were being embedded.
A missing or unusable local model is a developer mistake and raises
:class:`~bastion.core.errors.ConfigurationError` when the embedder is built or first used.
"""

from __future__ import annotations

from bastion.core.errors import (
    RemoteError,
    RemoteRequestError,
    RemoteResponseError,
    RemoteUnavailableError,
)

__all__ = [
    "EmbeddingError",
    "EmbeddingRequestError",
    "EmbeddingResponseError",
    "EmbeddingUnavailableError",
]

EmbeddingError = RemoteError
EmbeddingUnavailableError = RemoteUnavailableError
EmbeddingRequestError = RemoteRequestError
EmbeddingResponseError = RemoteResponseError
