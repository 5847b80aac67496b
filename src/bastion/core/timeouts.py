"""A time limit on every call to a mount's store.

A backend that hangs (a stopped database, a stalled object store) must not hang the agent,
nor the other mounts: :class:`TimedStore` wraps a store so that each call either finishes
within the mount's timeout or raises :class:`StoreUnavailableError` naming the mount. Other
mounts have their own stores and are untouched.

It bounds waiting, and only waiting: a call that blocks the event loop itself (a synchronous
system call) cannot be interrupted, so no store makes one there. Stores that talk to a network
are asynchronous or run their blocking work in threads, so their waits are bounded here. A
store that says it bounds its own waits (``bounds_own_waits``: ``LocalStore``, whose cached
reads answer on the loop and whose other calls hop to its worker threads) gets the limit
through :data:`~bastion.core.offload.CALL_LIMIT` and applies it to each hop, so a read
answered at once pays for no timer; its waits end with the same error.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

from bastion.core.errors import BastionError, StoreError, StoreUnavailableError
from bastion.core.listings import Sought
from bastion.core.models import FileInfo, WriteMode
from bastion.core.offload import CALL_LIMIT, CallLimit
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store

__all__ = ["TimedStore"]

T = TypeVar("T")
log = logging.getLogger(__name__)


class TimedStore(Store):
    """``inner`` with every call bounded by ``timeout`` seconds. Attributes that are not part
    of the store port (``close``, ...) are the inner store's; so are its declared
    capabilities (``keeps_labels``)."""

    def __init__(self, inner: Store, timeout: float, name: str) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.inner = inner
        self.timeout = timeout
        self.name = name
        self.kind = inner.kind
        self._limit = CallLimit(timeout, self._unavailable)
        self.keeps_labels = inner.keeps_labels
        self.gated_commits = inner.gated_commits
        self.ephemeral = inner.ephemeral
        self._own = inner.bounds_own_waits

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def change_mark(self) -> object | None:
        return self.inner.change_mark()

    def _unavailable(self) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"filesystem unresponsive: mount {self.name} ({self.kind}) did not answer "
            f"within {self.timeout:g} s; other mounts still work, try again later"
        )

    async def _bounded(self, call: Awaitable[T], theirs: Sequence[BaseException] = ()) -> T:
        """``call`` within the mount's time; ``theirs``: errors the caller's own callback
        raised (a read's ``check``), which go back to it as they are."""
        try:
            if self._own:
                token = CALL_LIMIT.set(self._limit)
                try:
                    return await call
                finally:
                    CALL_LIMIT.reset(token)
            try:
                async with asyncio.timeout(self.timeout):
                    return await call
            except TimeoutError:
                raise self._unavailable() from None
        except (BastionError, ValueError, TypeError):
            raise  # the port's own errors, and a caller's bad argument (the contract's)
        except Exception as exc:  # any other error: a foreign one, reworded
            if any(exc is mine for mine in theirs):
                raise
            raise self._foreign(exc) from None

    def _foreign(self, exc: Exception) -> StoreError:
        """A store that raised outside the port's errors (a plug-in's ``OSError`` naming its
        host path, a driver's ``RuntimeError``): told as a failure of the mount, without its
        words, which may name what the principal may not see; the operator log has them."""
        log.warning(
            "mount %s (%s): the store raised %s: %s", self.name, self.kind, type(exc).__name__, exc
        )
        return StoreError(
            f"mount {self.name} ({self.kind}): the store failed ({type(exc).__name__}); "
            "the operator log has the details"
        )

    async def stat(self, path: VPath) -> FileInfo:
        return await self._bounded(self.inner.stat(path))

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return await self._bounded(self.inner.read_range(path, offset, length))

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        return await self._bounded(self.inner.write(path, data, mode=mode, if_version=if_version))

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        await self._bounded(self.inner.delete(path, recursive=recursive))

    async def list(self, path: VPath) -> list[FileInfo]:
        return await self._bounded(self.inner.list(path))

    async def mkdir(self, path: VPath) -> None:
        await self._bounded(self.inner.mkdir(path))

    async def rename(self, src: VPath, dst: VPath) -> None:
        await self._bounded(self.inner.rename(src, dst))

    # The inner store's own versions of the derived calls (they may be one round trip).

    async def exists(self, path: VPath) -> bool:
        return await self._bounded(self.inner.exists(path))

    async def read_all(self, path: VPath) -> bytes:
        return await self._bounded(self.inner.read_all(path))

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        if check is None:
            return await self._bounded(self.inner.read_file(path, offset, length))
        raised: list[BaseException] = []

        def checked(info: FileInfo) -> None:
            try:
                check(info)
            except BaseException as exc:
                raised.append(exc)
                raise

        call = self.inner.read_file(path, offset, length, check=checked)
        return await self._bounded(call, raised)

    async def makedirs(self, path: VPath, *, exist_ok: bool = True) -> None:
        await self._bounded(self.inner.makedirs(path, exist_ok=exist_ok))

    async def copy_file(self, src: VPath, dst: VPath, *, overwrite: bool = False) -> FileInfo:
        return await self._bounded(self.inner.copy_file(src, dst, overwrite=overwrite))

    def walk(
        self, path: VPath = VPath.ROOT, *, max_depth: int | None = None
    ) -> AsyncIterator[FileInfo]:
        # The base walk lists through ``self.list``: each listing is bounded on its own.
        return super().walk(path, max_depth=max_depth)

    async def odd_names(self, path: VPath) -> frozenset[str]:
        return await self._bounded(self.inner.odd_names(path))

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        return await self._bounded(self.inner.list_sought(path, sought))

    def describe(self) -> str:
        return self.inner.describe()
