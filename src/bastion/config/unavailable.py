"""A mount whose store could not be opened: it stays in the tree and answers every call with
the one-line reason, so that the other mounts keep working (a missing folder, an unreachable
server or a missing extra takes down its own mount, never the workspace)."""

from __future__ import annotations

from typing import NoReturn

from bastion.core.errors import StoreError
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["UnavailableStore"]


class UnavailableStore(Store):
    """Every call raises :class:`StoreError` with ``reason`` (which names the mount)."""

    kind = "unavailable"
    timeout = None

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def _fail(self) -> NoReturn:
        raise StoreError(f"{self.reason} (`bastion config check` lists every problem)")

    async def stat(self, path: VPath) -> FileInfo:
        self._fail()

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        self._fail()

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        self._fail()

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        self._fail()

    async def list(self, path: VPath) -> list[FileInfo]:
        self._fail()

    async def mkdir(self, path: VPath) -> None:
        self._fail()

    async def rename(self, src: VPath, dst: VPath) -> None:
        self._fail()
