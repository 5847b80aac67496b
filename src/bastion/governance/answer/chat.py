"""The chat-model port: messages in, text out (whole, or as a stream of deltas).

One primitive, :meth:`ChatModel.complete`; :meth:`ChatModel.stream` is derived (a single delta)
and overridden by models that really stream. The answer workflow, the chat reranker and the
chat judge all speak only this port, so any model plugs in by implementing one method:
``HttpChatModel`` for OpenAI-compatible endpoints, or a scripted fake in tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["ChatModel", "Message"]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


class ChatModel(ABC):
    """A chat model. Implementations raise :class:`~.errors.ChatError` subclasses, with
    messages that never contain the prompt, the contexts or credentials."""

    name: str = "chat"
    """Identifies the model in answers and audit records (``"chat:<name>"``)."""

    @abstractmethod
    async def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> str:
        """The model's whole reply to ``messages``."""

    async def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> AsyncIterator[str]:
        """The reply as text deltas, in order (derived: the whole reply as one delta)."""
        yield await self.complete(messages, max_tokens=max_tokens)
