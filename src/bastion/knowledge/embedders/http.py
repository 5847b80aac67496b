"""Any OpenAI-compatible embeddings endpoint (``POST {base_url}/embeddings``) through httpx.

Works with OpenAI, Azure-style proxies, vLLM, text-embeddings-inference, Ollama, LM Studio and
anything else that speaks the same JSON. Texts are sent in batches of ``batch_size`` (up to
``concurrency`` batches at once); rows come back in input order and are L2-normalized here,
since not every server normalizes.

Failures are bounded: each attempt has a total ``timeout`` (connect, send, wait and read
together); a 429, a 5xx, a timeout or a connection failure is retried at most ``max_retries``
times with exponential backoff and jitter, waiting what ``Retry-After`` asks for when the
server says so (giving up at once when it asks for more than ``max_wait``). Any other 4xx is
not retried. Every failure is an :class:`~bastion.knowledge.embedders.errors.EmbeddingError`
whose message names the service (without credentials) and never contains the API key or the
texts. The HTTP side (retries, messages, the client) is :class:`bastion.remote.openai.Endpoint`,
shared with the chat model.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import numpy as np

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders.base import Embedder, Vectors, l2_normalize
from bastion.knowledge.embedders.errors import (
    EmbeddingResponseError,
)
from bastion.remote.openai import Endpoint, Retries

__all__ = ["HttpEmbedder", "approx_token_count"]


def approx_token_count(text: str) -> int:
    """A safe over-estimate for BPE tokenizers when the server's tokenizer is not at hand:
    one token per three UTF-8 bytes (English averages about four characters per token)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


class HttpEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible HTTP endpoint.

    ``base_url`` is the API root including its version, e.g. ``https://api.openai.com/v1`` or
    ``http://127.0.0.1:8080/v1``; ``dim`` is the vector length the model returns (checked on
    every reply). ``name`` defaults to ``model``; set it when one model id can give different
    vectors (e.g. a ``dimensions`` option). Pass ``client`` to reuse one
    :class:`httpx.AsyncClient` (the caller then owns and closes it); otherwise each
    :meth:`embed` call opens and closes its own.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        *,
        api_key: str | None = None,
        name: str | None = None,
        max_tokens: int = 8191,
        token_counter: Callable[[str], int] = approx_token_count,
        batch_size: int = 64,
        concurrency: int = 2,
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_wait: float = 30.0,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if min(dim, batch_size, concurrency) < 1:
            raise ConfigurationError("HttpEmbedder: dim, batch_size and concurrency must be >= 1")
        self.endpoint = Endpoint(
            "HttpEmbedder",
            base_url,
            "embeddings",
            noun="embedding",
            whose="the embedder's",
            retries=Retries(
                timeout=timeout, max_retries=max_retries, backoff=backoff, max_wait=max_wait
            ),
            api_key=api_key,
            headers=headers,
            client=client,
            hints={413: "send smaller batches or shorter texts"},
            fallback_hint="check the model name and the input",
        )
        self.url = self.endpoint.url
        self.model = model
        self.dim = dim
        self.name = name or model
        self.max_tokens = max_tokens
        self._count = token_counter
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait

    def __repr__(self) -> str:
        return f"HttpEmbedder(name={self.name!r}, url={self.endpoint.where!r}, dim={self.dim})"

    # -- the port ----------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        batches = [
            list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)
        ]
        async with self.endpoint.client() as client:
            parts = await self._embed_batches(client, batches)
        return l2_normalize(np.concatenate(parts, axis=0))

    # -- internals -----------------------------------------------------------------------------

    async def _embed_batches(
        self, client: httpx.AsyncClient, batches: list[list[str]]
    ) -> list[Vectors]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(batch: list[str]) -> Vectors:
            async with gate:
                return await self._post(client, batch)

        tasks = [asyncio.ensure_future(one(b)) for b in batches]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _post(self, client: httpx.AsyncClient, batch: list[str]) -> Vectors:
        response = await self.endpoint.post(client, {"model": self.model, "input": batch})
        return self._parse(response, len(batch))

    def _parse(self, response: httpx.Response, expected: int) -> Vectors:
        def bad(what: str) -> EmbeddingResponseError:
            return EmbeddingResponseError(
                self.endpoint.invalid_reply(what), status=response.status_code
            )

        try:
            body: Any = response.json()
        except ValueError:
            raise bad("not JSON") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise bad(f"expected {expected} embeddings")
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise bad("an item has no embedding list")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise bad("bad or repeated index")
            rows[index] = item["embedding"]
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise bad("embeddings are not lists of numbers") from None
        if vectors.shape != (expected, self.dim):
            raise bad(f"expected {self.dim} dimensions")
        if not np.isfinite(vectors).all():
            raise bad("non-finite values")
        return vectors
