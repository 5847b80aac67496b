"""The store port: seven primitives; everything else is derived here once for every store.

A store sees paths relative to its own root (``VPath.ROOT`` is the store's root). It knows
nothing of principals, policy or other mounts: the access guard (``core.guard``) wraps it and
has the same interface, and the workspace only ever talks to guarded stores.

Contract (checked by ``tests/contract/store_contract.py`` for every store):

* ``stat`` raises :class:`NotFoundError` for a missing entry.
* ``read_range`` returns at most ``length`` bytes from ``offset`` (fewer at the end of file) and
  never loads more than that range.
* ``write`` needs an existing parent directory; ``mode`` chooses create / overwrite / append;
  ``if_version`` makes the write conditional on the current version (:class:`ConflictError`
  otherwise) and the check and the write are atomic against every writer in any process, or
  the write is refused with :class:`StoreError` where the storage cannot check it (so are
  create-only writes and appends there). Readers see the old or the new content, never a mix.
* ``delete`` removes a file or an empty directory, or a whole tree with ``recursive=True``.
* ``list`` returns the direct children of a directory.
* ``mkdir`` creates one directory whose parent exists.
* ``rename`` moves an entry to a path that does not exist yet (never overwrites).
* A store never raises :class:`AccessDeniedError`: refusing access is the guard's job (a backend
  that is refused by its own server raises :class:`StoreError`).

Derived, and worth overriding where the backend can do better: ``read_file`` looks a file up
once and returns its info with the bytes, after letting a ``check`` refuse it on its info
(before any byte is read). ``LocalStore`` does it on one descriptor.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable

from bastion.core.errors import (
    AlreadyExistsError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.listings import Sought
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath

__all__ = ["ReadCheck", "Store"]

_COPY_CHUNK = 1 << 20

ReadCheck = Callable[[FileInfo], None]
"""Called with a file's info before its bytes are read; raises to refuse the read."""


class Store(ABC):
    """A storage backend. Implement the primitives; inherit the rest."""

    kind: str = "store"
    """A short name for the backend kind shown in the filesystem map (``memory``, ``local``)."""
    timeout: float | None = 30.0
    """Seconds a mount waits for one call before it reports the store unresponsive
    (``core.timeouts``); ``None`` for stores whose calls cannot hang."""
    keeps_labels: bool = False
    """Whether the store keeps labels of its own per file (``FileInfo.labels``, a database
    row's): they are then the base a document's labels are worked out from, in place of the
    mount's. A wrapper says what the store it wraps says."""
    bounds_own_waits: bool = False
    """Whether the store applies a mount's call time limit itself, hop by hop
    (``core.timeouts``); a wrapper says what the store it wraps says."""
    ephemeral: bool = False
    """Whether what the store holds goes with the process (the memory store): the change
    journal then records its changes without flushing them to disk (a record need outlive
    only the content it describes); a wrapper says what the store it wraps says."""
    gated_commits: bool = False
    """Whether every ``write``, ``delete`` and ``rename`` of the store passes
    :func:`~bastion.core.offload.commit` in a worker pool before its change is made, so that a
    caller's :data:`~bastion.core.offload.COMMIT_GATE` is opened first (the change journal
    records there); a wrapper that only passes calls through says what its store says."""

    # -- primitives --------------------------------------------------------------------------

    @abstractmethod
    async def stat(self, path: VPath) -> FileInfo: ...

    @abstractmethod
    async def read_range(
        self, path: VPath, offset: int = 0, length: int | None = None
    ) -> bytes: ...

    @abstractmethod
    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        """Write ``data`` at ``path`` whole. A conditional write (``if_version``,
        ``WriteMode.CREATE``) or an append is atomic against every writer in any process, or
        refused with :class:`StoreError` where the storage cannot check it; a condition that
        fails is :class:`ConflictError` (or :class:`AlreadyExistsError`)."""

    @abstractmethod
    async def delete(self, path: VPath, *, recursive: bool = False) -> None: ...

    @abstractmethod
    async def list(self, path: VPath) -> list[FileInfo]: ...

    @abstractmethod
    async def mkdir(self, path: VPath) -> None: ...

    @abstractmethod
    async def rename(self, src: VPath, dst: VPath) -> None: ...

    # -- derived -----------------------------------------------------------------------------

    def change_mark(self) -> object | None:
        """A value that is different after anything in this store changed, whoever changed
        it — or ``None`` where the store cannot tell without looking (the default: files on a
        disk or a server change under other processes). A store whose every change passes
        through this object (:class:`~bastion.stores.memory.MemoryStore`) returns a counter;
        a search then vouches for a hit's file without a ``stat`` while the mark is the same.
        Wrappers return their inner store's mark only when their own answers derive from the
        inner store's contents alone."""
        return None

    async def exists(self, path: VPath) -> bool:
        try:
            await self.stat(path)
        except NotFoundError:
            return False
        return True

    async def read_all(self, path: VPath) -> bytes:
        return await self.read_range(path, 0, None)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """The file's info and the bytes of ``[offset, offset + length)`` (to the end of the
        file when ``length`` is ``None``). ``check(info)`` runs before anything is read and
        may raise to refuse. A directory raises :class:`IsADirectoryError_`."""
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be non-negative")
        info = await self.stat(path)
        if info.is_dir:
            raise IsADirectoryError_(f"{path} is a directory")
        if check is not None:
            check(info)
        if length is None:
            length = max(info.size - offset, 0)
        return info, await self.read_range(path, offset, length)

    async def makedirs(self, path: VPath, *, exist_ok: bool = True) -> None:
        """Create ``path`` and any missing parents."""
        missing: list[VPath] = []
        probe = path
        while not probe.is_root:
            try:
                info = await self.stat(probe)
            except NotFoundError:
                missing.append(probe)
                probe = probe.parent
                continue
            if not info.is_dir:
                raise NotADirectoryError_(f"{probe} is a file, not a directory")
            if probe == path and not exist_ok:
                raise AlreadyExistsError(f"{path} already exists")
            break
        for directory in reversed(missing):
            try:
                await self.mkdir(directory)
            except AlreadyExistsError:
                if not await self._is_dir(directory):
                    raise

    async def _is_dir(self, path: VPath) -> bool:
        try:
            return (await self.stat(path)).is_dir
        except NotFoundError:
            return False

    async def walk(
        self, path: VPath = VPath.ROOT, *, max_depth: int | None = None
    ) -> AsyncIterator[FileInfo]:
        """Every entry under ``path`` (not ``path`` itself), parents before children."""
        stack: list[tuple[VPath, int]] = [(path, 1)]
        while stack:
            directory, depth = stack.pop()
            for info in sorted(await self.list(directory), key=lambda i: i.path.parts):
                yield info
                if info.is_dir and (max_depth is None or depth < max_depth):
                    stack.append((info.path, depth + 1))

    async def copy_file(self, src: VPath, dst: VPath, *, overwrite: bool = False) -> FileInfo:
        """Copy one file within this store, chunk by chunk."""
        info = await self.stat(src)
        mode = WriteMode.OVERWRITE if overwrite else WriteMode.CREATE
        if info.size <= _COPY_CHUNK:
            return await self.write(dst, await self.read_all(src), mode=mode)
        first = await self.read_range(src, 0, _COPY_CHUNK)
        result = await self.write(dst, first, mode=mode)
        offset = len(first)
        while True:
            chunk = await self.read_range(src, offset, _COPY_CHUNK)
            if not chunk:
                return result
            result = await self.write(dst, chunk, mode=WriteMode.APPEND)
            offset += len(chunk)

    def describe(self) -> str:
        """A short, agent-safe description (no host paths or credentials)."""
        return self.kind

    # -- what a store may say of itself (declared here, with the default) --------------------

    async def odd_names(self, path: VPath) -> frozenset[str]:
        """Names in the folder ``path`` that :meth:`list` leaves out because they cannot be
        served: links, special files, and names in another Unicode normalization form (given
        in NFC). A store that holds nothing of the kind keeps the default."""
        del path
        return frozenset()

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        """The entries of the folder ``path`` a walk that wants only some names needs (a
        glob, :class:`~bastion.core.listings.Sought`): every folder and every file whose
        name ``sought`` keeps, as :meth:`list` gives them; other files may be there too. A
        store that can skip the others for less than listing them keeps the default."""
        del sought
        return await self.list(path)

    # -- shared by the primitives ------------------------------------------------------------

    @staticmethod
    def begin_write(path: VPath, mode: WriteMode | str) -> WriteMode:
        """The start every store's :meth:`write` shares: ``mode`` as a :class:`WriteMode` (a
        plain ``"create"`` or ``"append"`` too, never taken for an overwrite; anything else is
        a ``ValueError``), and the root refused (it is a directory)."""
        checked = WriteMode(mode)
        if path.is_root:
            raise IsADirectoryError_(path="/")
        return checked
