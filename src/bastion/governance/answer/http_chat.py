"""Any OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``) through httpx.

Works with OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio and anything else that speaks
the same JSON, whole replies or Server-Sent Events (``stream=True``).

Failures are bounded, as for :class:`~bastion.knowledge.embedders.HttpEmbedder`: each attempt
has a total ``timeout``; a 429, a 5xx, a timeout or a connection failure is retried at most
``max_retries`` times with exponential backoff and jitter, waiting what ``Retry-After`` asks
for (giving up at once when it asks for more than ``max_wait``); any other 4xx is not retried.
A stream is retried only until the server accepts it (a 200): once text may have been handed
on, a failure ends the stream with an error (never a silently shortened reply), and a stream
that stalls for ``timeout`` seconds between events, or ends without ``[DONE]`` or a finish
reason, is a failure too. Every message names the
service without credentials and never contains the API key, the prompt or the contexts.
The HTTP side (retries, messages, the client) is :class:`bastion.remote.openai.Endpoint`,
shared with the embedder; this module parses replies and events.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx

from bastion.governance.answer.chat import ChatModel, Message
from bastion.governance.answer.errors import (
    ChatResponseError,
    ChatUnavailableError,
)
from bastion.remote.openai import Endpoint, Retries
from bastion.remote.retry import RETRYABLE_TRANSPORT

__all__ = ["HttpChatModel"]


class HttpChatModel(ChatModel):
    """A chat model behind an OpenAI-compatible HTTP endpoint.

    ``base_url`` is the API root with its version (``https://api.openai.com/v1``,
    ``http://127.0.0.1:8080/v1``). ``temperature`` defaults to 0 so answers repeat. Pass
    ``client`` to reuse one :class:`httpx.AsyncClient` (the caller owns and closes it);
    otherwise each call opens and closes its own.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        name: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 30.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.endpoint = Endpoint(
            "HttpChatModel",
            base_url,
            "chat/completions",
            noun="chat",
            whose="the chat model's",
            retries=Retries(
                timeout=timeout, max_retries=max_retries, backoff=backoff, max_wait=max_wait
            ),
            api_key=api_key,
            headers=headers,
            client=client,
            hints={413: "ask with a smaller context budget"},
            fallback_hint="check the model name and the request",
        )
        self.url = self.endpoint.url
        self.model = model
        self.name = name or model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._where = self.endpoint.where

    def __repr__(self) -> str:
        return f"HttpChatModel(name={self.name!r}, url={self._where!r})"

    # -- the port ------------------------------------------------------------------------------

    async def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> str:
        payload = self._payload(messages, max_tokens, stream=False)
        async with self.endpoint.client() as client:
            return self._content(await self.endpoint.post(client, payload))

    async def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> AsyncIterator[str]:
        payload = self._payload(messages, max_tokens, stream=True)
        async with self.endpoint.client() as client:
            response = await self.endpoint.post(client, payload, stream=True)
            try:
                async for delta in self._events(response):
                    yield delta
            finally:
                await response.aclose()

    # -- requests ------------------------------------------------------------------------------

    def _payload(
        self, messages: Sequence[Message], max_tokens: int | None, *, stream: bool
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "temperature": self.temperature,
            "stream": stream,
        }
        limit = max_tokens if max_tokens is not None else self.max_tokens
        if limit is not None:
            payload["max_tokens"] = limit
        return payload

    # -- replies -------------------------------------------------------------------------------

    def _bad(self, what: str, status: int | None = 200) -> ChatResponseError:
        return ChatResponseError(self.endpoint.invalid_reply(what), status=status)

    def _content(self, response: httpx.Response) -> str:
        try:
            body: Any = response.json()
        except ValueError:
            raise self._bad("not JSON") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._bad("no choices")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._bad("no message content")
        return content

    async def _events(self, response: httpx.Response) -> AsyncIterator[str]:
        """Text deltas from a Server-Sent Events body, until ``[DONE]`` or a finish reason.
        Reasoning deltas (``reasoning_content``) are not content and are dropped."""
        lines = response.aiter_lines()
        finished = False
        while True:
            try:
                async with asyncio.timeout(self.timeout):
                    line = await anext(lines)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise ChatUnavailableError(
                    f"chat service {self._where} stalled mid-answer (nothing for "
                    f"{self.timeout:g} s); try again"
                ) from None
            except RETRYABLE_TRANSPORT as exc:
                raise ChatUnavailableError(
                    f"chat service {self._where} broke off mid-answer ({type(exc).__name__}); "
                    "try again"
                ) from None
            if not line.startswith("data:"):
                continue  # comments, event names, ids, blank separators
            data = line[5:].strip()
            if data == "[DONE]":
                finished = True
                break
            try:
                event: Any = json.loads(data)
            except ValueError:
                raise self._bad("an event is not JSON") from None
            if not isinstance(event, dict) or "error" in event:
                raise self._bad("the stream reported an error")
            for choice in event.get("choices") or ():
                if not isinstance(choice, dict):
                    raise self._bad("a choice is not an object")
                delta = choice.get("delta")
                text = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(text, str) and text:
                    yield text
                if choice.get("finish_reason"):
                    finished = True
        if not finished:
            raise ChatUnavailableError(
                f"chat service {self._where} ended the stream before the answer was complete; "
                "try again"
            )
