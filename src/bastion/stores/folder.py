"""One folder of a store, seen as a whole store: what each scope area is mounted from.

Like fsspec's ``DirFileSystem``: every path is the folder joined with the path asked for, so
nothing outside the folder can be named (a :class:`~bastion.VPath` has no ``..``). The folder
need not exist yet: until the first write creates it, it reads as an empty directory, so a
thread's scratch area costs nothing until it is used and is empty again once it is removed.

The backing store's errors name its own paths; they are re-worded here to name the paths of
this view, so the guard above can re-word them again to workspace paths.
"""

from __future__ import annotations

import builtins
import re

from bastion.core.errors import (
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotFoundError,
    OperationError,
)
from bastion.core.listings import Sought
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store

__all__ = ["FolderStore"]


class FolderStore(Store):
    """The folder ``folder`` of ``inner``, as a store whose root is that folder."""

    def __init__(self, inner: Store, folder: VPath) -> None:
        self.inner = inner
        self.folder = folder
        self.kind = inner.kind
        self.timeout = inner.timeout
        """The backing store's call time limit (a mount applies it to this view)."""
        self.keeps_labels = inner.keeps_labels
        self.bounds_own_waits = inner.bounds_own_waits
        """Whether the backing store applies a mount's limit itself (``core.timeouts``)."""
        self._sought: dict[Sought, Sought] = {}
        """The last wish of ``list_sought`` and the same in the backing store's paths."""
        self._inner_prefix = re.compile(re.escape(str(folder)) + r"(?:/|(?=[\s:;,'\"]|$))")
        ancestors = [str(VPath(folder.parts[:n])) for n in range(1, len(folder.parts))]
        self._ancestor = (
            re.compile("(?:" + "|".join(map(re.escape, ancestors)) + r")(?=[\s:;,'\"]|$)")
            if ancestors
            else None
        )

    def describe(self) -> str:
        return self.inner.describe()

    def change_mark(self) -> object | None:
        return self.inner.change_mark()

    def _in(self, path: VPath) -> VPath:
        return self.folder.join(path)

    async def odd_names(self, path: VPath) -> frozenset[str]:
        try:
            return await self.inner.odd_names(self._in(path))
        except NotFoundError as exc:
            if path.is_root:
                return frozenset()  # the folder is not there yet: an empty directory
            raise self._outer(exc, path) from exc
        except OperationError as exc:
            raise self._outer(exc, path) from exc

    def _outer(self, exc: OperationError, path: VPath) -> OperationError:
        """``exc`` with the backing store's paths turned into paths of this view. A message
        about a folder above this one (missing on the backing store) is about ``path``."""
        if self.folder.is_root:
            return exc
        text = self._inner_prefix.sub("/", str(exc))
        if self._ancestor is not None and self._ancestor.search(text):
            text = (
                f"{path} not found"
                if isinstance(exc, NotFoundError)
                else f"{path}: the area's folder cannot be used on its store; check the scopes"
            )
        try:
            return type(exc)(text)
        except TypeError:  # pragma: no cover - every OperationError takes one message
            return exc

    async def _ensure_folder(self) -> None:
        """Create the folder (and its parents) when it is missing."""
        await self.inner.makedirs(self.folder)

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        try:
            return (await self.inner.stat(self._in(path))).at(path)
        except NotFoundError as exc:
            if path.is_root:
                return FileInfo(VPath.ROOT, EntryKind.DIRECTORY)
            raise self._outer(exc, path) from exc
        except OperationError as exc:
            raise self._outer(exc, path) from exc

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        try:
            return await self.inner.read_range(self._in(path), offset, length)
        except NotFoundError as exc:
            if path.is_root:
                raise IsADirectoryError_(path="/") from exc
            raise self._outer(exc, path) from exc
        except OperationError as exc:
            raise self._outer(exc, path) from exc

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        # A refusal raised by ``check`` already names the caller's paths: pass it on as is.
        refused: list[BaseException] = []

        def inner_check(info: FileInfo) -> None:
            if check is None:
                return
            try:
                check(info.at(path))
            except BaseException as exc:
                refused.append(exc)
                raise

        try:
            info, data = await self.inner.read_file(
                self._in(path), offset, length, check=inner_check
            )
        except OperationError as exc:
            if refused and exc is refused[0]:
                raise
            if path.is_root and isinstance(exc, NotFoundError):
                raise IsADirectoryError_(path="/") from exc
            raise self._outer(exc, path) from exc
        return info.at(path), data

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        target = self._in(path)
        try:
            try:
                info = await self.inner.write(target, data, mode=mode, if_version=if_version)
            except NotFoundError:
                if not path.parent.is_root:
                    raise
                await self._ensure_folder()
                info = await self.inner.write(target, data, mode=mode, if_version=if_version)
        except OperationError as exc:
            raise self._outer(exc, path) from exc
        return info.at(path)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        try:
            await self.inner.delete(self._in(path), recursive=recursive)
        except OperationError as exc:
            raise self._outer(exc, path) from exc

    async def list(self, path: VPath) -> list[FileInfo]:
        try:
            entries = await self.inner.list(self._in(path))
        except NotFoundError as exc:
            if path.is_root:
                return []
            raise self._outer(exc, path) from exc
        except OperationError as exc:
            raise self._outer(exc, path) from exc
        return [info.at(path.child(info.path.name)) for info in entries]

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        inner = self._sought.get(sought)
        if inner is None:  # the wish in the backing store's paths, one per wish
            depth, into = len(self.folder.parts), sought.into
            inner = Sought(sought.names, lambda p: into(VPath(p.parts[depth:])))
            self._sought = {sought: inner}
        try:
            entries = await self.inner.list_sought(self._in(path), inner)
        except NotFoundError as exc:
            if path.is_root:
                return []
            raise self._outer(exc, path) from exc
        except OperationError as exc:
            raise self._outer(exc, path) from exc
        return [info.at(path.child(info.path.name)) for info in entries]

    async def mkdir(self, path: VPath) -> None:
        target = self._in(path)
        try:
            try:
                await self.inner.mkdir(target)
            except NotFoundError:
                if not path.parent.is_root:
                    raise
                await self._ensure_folder()
                await self.inner.mkdir(target)
        except OperationError as exc:
            raise self._outer(exc, path) from exc

    async def rename(self, src: VPath, dst: VPath) -> None:
        try:
            await self.inner.rename(self._in(src), self._in(dst))
        except OperationError as exc:
            raise self._outer(exc, src) from exc

    # -- the folder itself -------------------------------------------------------------------

    async def remove_folder_if_empty(self) -> bool:
        """Remove the backing folder when it is empty (or gone); False when entries remain.
        Never removes content: an empty folder holds nothing to guard."""
        if self.folder.is_root:
            return not await self.inner.list(self.folder)
        try:
            await self.inner.delete(self.folder, recursive=False)
        except NotFoundError:
            return True
        except DirectoryNotEmptyError:
            return False
        return True
