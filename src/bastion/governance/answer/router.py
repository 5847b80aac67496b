"""A source router that asks a chat model which sources a question needs.

Plugs into ``Knowledge(router=ChatRouter(chat, descriptions))``. The model sees the question
and only the sources the asker may query (with their descriptions); whatever it answers is
intersected with those by :func:`bastion.knowledge.routing.route`, so it can narrow a search
but never widen it, and on any failure every authorized source is searched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from bastion.governance.answer.chat import ChatModel, Message

__all__ = ["ChatRouter"]

_PROMPT = (
    "You route a question to the document sources that can answer it. Reply with a JSON "
    'object {"sources": [...]} naming one or more of the sources listed, and nothing else.'
)


class ChatRouter:
    """``await router(question, sources)`` -> the sources the model picks."""

    def __init__(self, chat: ChatModel, descriptions: Mapping[str, str] | None = None) -> None:
        self.chat = chat
        self.descriptions = dict(descriptions or {})

    async def __call__(self, question: str, sources: Sequence[str]) -> list[str]:
        listed = "\n".join(
            f"- {source}: {self.descriptions.get(source, '')}".rstrip(": ") for source in sources
        )
        reply = await self.chat.complete(
            [
                Message("system", _PROMPT),
                Message("user", f"Question: {question}\n\nSources:\n{listed}"),
            ],
            max_tokens=200,
        )
        start, end = reply.find("{"), reply.rfind("}")
        data = json.loads(reply[start : end + 1]) if 0 <= start < end else {}
        picked = data.get("sources") if isinstance(data, dict) else None
        if not isinstance(picked, list):
            raise ValueError("the chat router's reply names no sources")
        return [str(source) for source in picked]
