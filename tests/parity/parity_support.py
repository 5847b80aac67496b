"""Plumbing of the parity suite: one event loop in a thread for every asynchronous front end,
clients held open in a task of their own, and the plain (JSON-like) form of any answer, with
what legitimately differs between the two worlds normalized away."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import re
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import PurePath
from typing import Any, TypeVar

from bastion.core.paths import VPath

T = TypeVar("T")

TIMEOUT = 120.0


class Loop:
    """An event loop running in a daemon thread; :meth:`run` waits for a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T]) -> T:
        future = asyncio.run_coroutine_threadsafe(_wrap(coro), self.loop)
        return future.result(TIMEOUT)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()


async def _wrap(coro: Awaitable[T]) -> T:
    return await coro


class Held:
    """An async context manager (an MCP client...) entered and left by one task of its own,
    which runs the calls given to :meth:`call` one at a time: anyio's cancel scopes must be
    left by the task that entered them."""

    def __init__(self, loop: Loop, opener: Callable[[], AbstractAsyncContextManager[Any]]):
        self._loop = loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        ready: asyncio.Future[Any] = loop.loop.create_future()
        self._task = asyncio.run_coroutine_threadsafe(self._serve(opener, ready), loop.loop)
        loop.run(_ready(ready))

    async def _serve(
        self, opener: Callable[[], AbstractAsyncContextManager[Any]], ready: asyncio.Future[Any]
    ) -> None:
        try:
            async with opener() as client:
                ready.set_result(None)
                while (job := await self._queue.get()) is not None:
                    fn, done = job
                    try:
                        done.set_result(await fn(client))
                    except Exception as exc:  # handed to the caller
                        done.set_exception(exc)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def call(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        async def ask() -> T:
            done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
            await self._queue.put((fn, done))
            return await done

        return self._loop.run(ask())

    def close(self) -> None:
        self._loop.loop.call_soon_threadsafe(self._queue.put_nowait, None)
        with contextlib.suppress(Exception):  # a client that fails to close changes no answer
            self._task.result(TIMEOUT)


async def _ready(ready: asyncio.Future[Any]) -> None:
    await ready


# -- plain answers -----------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` as JSON-like data: dataclasses as dicts, enums as values, paths as text."""
    if isinstance(value, VPath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, PurePath):
        return str(value)
    return repr(value)


def told(exc: BaseException) -> dict[str, str]:
    """An exception as the caller sees it: its type and its words."""
    return {"raised": type(exc).__name__, "message": str(exc)}


def as_json(text: str) -> Any:
    """``text`` read as JSON when it is JSON, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


_TIME_KEYS = frozenset(
    {"time", "modified", "mtime", "changed_ns", "started", "finished", "iat", "exp"}
)
_GONE_KEYS = frozenset({"duration_ms", "duration", "took_ms", "elapsed_ms", "seconds"})
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def normal(value: Any, root: str) -> Any:
    """``value`` with what may differ between two worlds made equal: the world's folder in
    text, times, durations and versions (a version is made from the inode and the clock).
    Nothing else is touched: names, counts, scores, sizes and words must be equal as they
    are."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in _GONE_KEYS:
                continue
            if k in _TIME_KEYS and v is not None:
                out[k] = "<time>"
            elif k in ("version", "if_version") and v is not None:
                out[k] = "<version>"
            else:
                out[k] = normal(v, root)
        return out
    if isinstance(value, list):
        return [normal(v, root) for v in value]
    if isinstance(value, str):
        return _ISO.sub("<time>", value.replace(root, "<root>"))
    return value
