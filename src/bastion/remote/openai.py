"""One OpenAI-compatible endpoint: ``POST {base_url}/<path>`` with JSON, bounded retries and
one-line errors. The embedder (``/embeddings``) and the chat model (``/chat/completions``) each
hold one and keep only their own reply parsing.

What it does for both:

* checks ``base_url`` (an http(s) URL with a host) and the retry settings once, raising
  :class:`~bastion.core.errors.ConfigurationError` naming the adapter;
* sends the API key as a bearer token and never puts it in a message (``where`` is the URL
  without user info, query or fragment; a server's error type and code are repeated only
  when they are short words, redacted; its reason phrase never, the standard one instead);
* opens its own :class:`httpx.AsyncClient` per call, or uses the caller's;
* retries 429, 5xx, timeouts and transport failures as :mod:`bastion.remote.retry` says; any
  other 4xx is refused at once with a hint per status.

Not the official ``openai`` SDK: see ``docs/decisions/`` (2026-11-25, one OpenAI-compatible
client) for the measurements and the properties that decided it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx

from bastion.core.errors import ConfigurationError
from bastion.remote.retry import Service, send_with_retries

__all__ = ["Endpoint", "Retries"]

_TAG = re.compile(r"[A-Za-z0-9_.\-]{1,40}")
"""An error type or code a server sends (``invalid_request_error``, ``model_not_found``) that
a message may repeat; any other text (a URL with credentials, control characters, a long
body) is left out."""

_HINTS = {
    401: "check the API key",
    403: "check the API key's permissions",
    404: "check base_url and the model name",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Retries:
    """How long one attempt may take and how often a failed one is repeated."""

    timeout: float
    """Seconds for one whole attempt (connect, send, wait and read together)."""
    max_retries: int
    """Attempts after the first; 0 sends once."""
    backoff: float
    """Base of the exponential backoff, in seconds."""
    max_wait: float
    """The longest wait (backoff, or a server's ``Retry-After``) before giving up at once."""


class Endpoint:
    """``POST {base_url}/{path}`` of an OpenAI-compatible API, for the adapter ``owner``.

    ``noun`` names the service in messages (``"embedding"``, ``"chat"``), ``whose`` the thing
    whose ``base_url`` to check (``"the embedder's"``). A request the service refuses raises
    :class:`~bastion.core.errors.RemoteRequestError`, one that failed every attempt
    :class:`~bastion.core.errors.RemoteUnavailableError`; ``hints`` adds advice per HTTP
    status (413 differs between an embedder and a chat model) and ``fallback_hint`` covers
    the other statuses.
    """

    def __init__(
        self,
        owner: str,
        base_url: str,
        path: str,
        *,
        noun: str,
        whose: str,
        retries: Retries,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        hints: Mapping[int, str] | None = None,
        fallback_hint: str,
    ) -> None:
        try:
            base = httpx.URL(base_url)  # a query (``?api-version=...``) stays after the path
            url = base.copy_with(path=base.path.rstrip("/") + "/" + path)
        except httpx.InvalidURL as exc:
            raise ConfigurationError(f"{owner}: base_url is not a valid URL") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"{owner}: base_url must be an http(s) URL with a host")
        if retries.timeout <= 0 or min(retries.max_retries, retries.backoff, retries.max_wait) < 0:
            raise ConfigurationError(
                f"{owner}: max_retries, backoff and max_wait must be >= 0 and timeout > 0"
            )
        self.url = url
        self.retries = retries
        self.where = str(url.copy_with(userinfo=b"", query=None, fragment=None))
        """The URL for messages: scheme, host, port and path; never credentials."""
        self._noun = noun
        self._api_key = api_key or ""
        self._headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._client = client
        self._hints = {**_HINTS, **(hints or {})}
        self._fallback_hint = fallback_hint
        self._service = Service(noun, whose, self.where)

    @asynccontextmanager
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        """The caller's client, or one opened for this call and closed after it."""
        if self._client is not None:
            yield self._client
            return
        async with httpx.AsyncClient(timeout=self.retries.timeout) as client:
            yield client

    async def post(
        self, client: httpx.AsyncClient, payload: Mapping[str, Any], *, stream: bool = False
    ) -> httpx.Response:
        """A 200 reply to ``payload`` (its headers read; its body too unless ``stream``, and
        then the caller closes it), after bounded retries; raises the remote-error family."""
        headers = {**self._headers, "Accept": "text/event-stream"} if stream else self._headers
        return await send_with_retries(
            client,
            lambda: client.build_request("POST", self.url, json=payload, headers=headers),
            self._service,
            self.refusal,
            stream=stream,
            timeout=self.retries.timeout,
            max_retries=self.retries.max_retries,
            backoff=self.retries.backoff,
            max_wait=self.retries.max_wait,
        )

    def invalid_reply(self, what: str) -> str:
        """The message for a 200 whose body is not what the API promises."""
        return (
            f"{self._noun} service {self.where} sent an invalid reply ({what}); check that "
            "base_url points at an OpenAI-compatible /v1 API"
        )

    def refusal(self, response: httpx.Response) -> str:
        """The message for a refused request: status, the error's type and code (redacted),
        and what to check."""
        code = ""
        try:
            error = response.json().get("error")
            if isinstance(error, dict):
                tags = [
                    error[k]
                    for k in ("type", "code")
                    if isinstance(error.get(k), str) and _TAG.fullmatch(error[k])
                ]
                code = self._redact(", ".join(tags))
        except (ValueError, AttributeError):
            pass
        detail = f" ({code})" if code else ""
        hint = self._hints.get(response.status_code, self._fallback_hint)
        status = response.status_code
        try:  # the standard phrase: the server's own is free text (a URL, control characters)
            phrase = f" {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = ""
        return (
            f"{self._noun} service {self.where} refused the request: "
            f"HTTP {status}{phrase}{detail}; {hint}"
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text
