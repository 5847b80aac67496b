"""An overlay: a store whose writes land in a layer over a base that stays unchanged until a
person applies the layer.

Reads see the layer over the base; a write copies the file into the layer (an append copies
the base's content first); a delete of something in the base is remembered as *gone* (a
whiteout) and hides it. The base is never written until :meth:`OverlayStore.apply`, which
writes each changed file into the base atomically (one conditional write per file) and
refuses a file whose base changed since the layer took it — the version the layer saw is
recorded when the layer first takes a path (when it was read through the overlay before,
the version read then). :meth:`OverlayStore.discard` drops the layer.

What the layer holds besides the files (the versions taken, the whiteouts) is one small JSON
file in the layer, :data:`MANIFEST`, updated with conditional writes, so several processes
may share one layer. Apply is resumable after a kill: a file whose base already holds the
layer's content counts as applied, a whiteout whose path is already gone too.

Any store can be the base (a host folder, a database) and any store the layer; a per-thread
layer is a layer store per thread (``FolderStore(layers, "/<thread>")``).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.overlay_port import Overlay, OverlayReport
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["MANIFEST", "OverlayReport", "OverlayStore"]

MANIFEST = VPath.parse("/.bastion-overlay.json")
"""Where the layer keeps what it took from the base and what it deleted (never listed)."""
_LAYER, _BASE = "l:", "b:"
"""Version prefixes: a layer's version never equals a base's, so every write changes it."""


@dataclass
class _Manifest:
    taken: dict[str, str | None] = field(default_factory=dict)
    """Path -> the base's version when the layer took the path (``None``: absent there)."""
    gone: set[str] = field(default_factory=set)
    """Paths deleted over the base (whiteouts): they and everything under them are hidden."""

    def hides(self, path: VPath) -> bool:
        return any("/" + "/".join(path.parts[:n]) in self.gone for n in range(1, path.depth + 1))

    def dump(self) -> bytes:
        return json.dumps({"taken": self.taken, "gone": sorted(self.gone)}).encode()

    @classmethod
    def load(cls, data: bytes) -> _Manifest:
        raw = json.loads(data)
        return cls(dict(raw.get("taken", {})), set(raw.get("gone", ())))


class OverlayStore(Store, Overlay):
    """``layer`` over ``base``: reads see both, writes go to the layer alone."""

    kind = "overlay"

    def __init__(self, base: Store, layer: Store) -> None:
        self.base = base
        self.layer = layer
        self.timeout = base.timeout
        self._read: dict[str, str | None] = {}
        """Base versions read through the overlay (what a later write was based on)."""

    def describe(self) -> str:
        return f"overlay over {self.base.describe()}"

    # -- the manifest ----------------------------------------------------------------------

    async def _manifest(self) -> tuple[_Manifest, str | None]:
        try:
            info, data = await self.layer.read_file(MANIFEST)
        except NotFoundError:
            return _Manifest(), None
        return _Manifest.load(data), info.version

    async def _change(self, edit: object) -> None:
        """Apply ``edit(manifest)`` with a conditional write (retried when another writer won)."""
        assert callable(edit)
        while True:  # no lock: callers may be on several event loops, threads, processes
            manifest, version = await self._manifest()
            edit(manifest)
            try:
                if version is None:
                    await self.layer.write(MANIFEST, manifest.dump(), mode=WriteMode.CREATE)
                else:
                    await self.layer.write(MANIFEST, manifest.dump(), if_version=version)
                return
            except (ConflictError, AlreadyExistsError):
                continue

    # -- reading -----------------------------------------------------------------------------

    @staticmethod
    def _reserved(path: VPath) -> None:
        if path == MANIFEST:
            raise NotFoundError(f"{path} not found")

    async def _layer_stat(self, path: VPath) -> FileInfo | None:
        """The layer's entry, ``None`` when it has none (a file above the path in the layer
        shadows the base: "not a directory")."""
        try:
            return await self.layer.stat(path)
        except NotFoundError:
            return None

    async def _base_stat(self, path: VPath, manifest: _Manifest) -> FileInfo | None:
        if manifest.hides(path):
            return None
        try:
            return await self.base.stat(path)
        except (NotFoundError, NotADirectoryError_):
            return None

    async def stat(self, path: VPath) -> FileInfo:
        self._reserved(path)
        info = await self._layer_stat(path)
        if info is not None:
            return _tagged(info, _LAYER)
        if path.is_root:
            return FileInfo(path, EntryKind.DIRECTORY)
        manifest, _ = await self._manifest()
        if manifest.hides(path):
            raise NotFoundError(f"{path} not found")
        info = await self.base.stat(path)
        if info.is_file:
            self._read.setdefault(str(path), info.version)
        return _tagged(info, _BASE)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        self._reserved(path)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be non-negative")
        if await self._layer_stat(path) is not None:
            return await self.layer.read_range(path, offset, length)
        await self.stat(path)  # hidden or missing: not found; a directory: its own error
        return await self.base.read_range(path, offset, length)

    async def list(self, path: VPath) -> builtins.list[FileInfo]:
        self._reserved(path)
        if not (await self.stat(path)).is_dir:
            raise NotADirectoryError_(f"{path} is not a directory")
        manifest, _ = await self._manifest()
        found: dict[str, FileInfo] = {}
        if not manifest.hides(path):
            try:
                for entry in await self.base.list(path):
                    if not manifest.hides(entry.path):
                        found[entry.path.name] = _tagged(entry, _BASE)
            except (NotFoundError, NotADirectoryError_):
                pass
        try:
            for entry in await self.layer.list(path):
                if entry.path != MANIFEST:
                    found[entry.path.name] = _tagged(entry, _LAYER)
        except (NotFoundError, NotADirectoryError_):
            pass
        return [found[name] for name in sorted(found)]

    # -- writing -----------------------------------------------------------------------------

    async def _parent(self, path: VPath) -> None:
        """The parent exists in the merged view; make it in the layer."""
        parent = await self.stat(path.parent)
        if not parent.is_dir:
            raise NotADirectoryError_(f"{path.parent} is not a directory")
        await self.layer.makedirs(path.parent)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        mode = self.begin_write(path, mode)
        if path == MANIFEST:
            raise StoreError(f"{path} is the overlay's own record; choose another name")
        await self._parent(path)
        held = await self._layer_stat(path)
        if held is not None:
            if held.is_dir:
                raise IsADirectoryError_(f"{path} is a directory")
            wanted = _untagged(if_version, _LAYER)
            return _tagged(await self.layer.write(path, data, mode=mode, if_version=wanted), _LAYER)
        manifest, _ = await self._manifest()
        below = await self._base_stat(path, manifest)
        if below is not None and below.is_dir:
            raise IsADirectoryError_(f"{path} is a directory")
        if mode is WriteMode.CREATE and below is not None:
            raise AlreadyExistsError(f"{path} already exists")
        if if_version is not None and (
            below is None or _untagged(if_version, _BASE) != below.version
        ):
            raise ConflictError(f"{path} changed since version {if_version}")
        content = data
        if mode is WriteMode.APPEND and below is not None:
            content = await self.base.read_all(path) + data
        key = str(path)
        seen = self._read.get(key, below.version if below is not None else None)
        if below is None:
            seen = None
        revived = key in manifest.gone and await self._base_is_file(path)

        def take(m: _Manifest) -> None:
            if key in m.gone:  # deleted before: the version taken when it was deleted
                m.taken.setdefault(key, seen)
            else:  # the layer takes the path now (an entry left by an apply killed is stale)
                m.taken[key] = seen
            if revived:  # a file deleted, then written again: the write replaces the deletion
                m.gone.discard(key)

        await self._change(take)
        try:
            info = await self.layer.write(path, content, mode=WriteMode.CREATE)
        except AlreadyExistsError:  # another writer took the path first
            if mode is WriteMode.CREATE or if_version is not None:
                raise ConflictError(f"{path} changed since version {if_version}") from None
            info = await self.layer.write(path, data, mode=mode)
        return _tagged(info, _LAYER)

    async def _base_is_file(self, path: VPath) -> bool:
        try:
            return (await self.base.stat(path)).is_file
        except (NotFoundError, NotADirectoryError_):
            return False

    async def mkdir(self, path: VPath) -> None:
        self._reserved(path)
        if path.is_root or await self.exists(path):
            raise AlreadyExistsError(f"{path} already exists")
        await self._parent(path)
        await self.layer.mkdir(path)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise OperationError("refusing to delete the root of a store")
        info = await self.stat(path)
        if info.is_dir and not recursive and await self.list(path):
            raise DirectoryNotEmptyError(f"{path} is not empty; delete recursively")
        if await self._layer_stat(path) is not None:
            await self.layer.delete(path, recursive=True)
        manifest, _ = await self._manifest()
        below = await self._base_stat(path, manifest)
        key = str(path)

        def forget(m: _Manifest) -> None:
            for taken in [t for t in m.taken if t == key or t.startswith(key + "/")]:
                if m.taken[taken] is None:  # nothing of it in the base: nothing to apply
                    del m.taken[taken]
            if below is not None:
                m.gone.add(key)
                if below.is_file:
                    m.taken.setdefault(key, self._read.get(key, below.version))

        await self._change(forget)

    async def rename(self, src: VPath, dst: VPath) -> None:
        if src == dst or dst.is_relative_to(src):
            raise OperationError(f"cannot move {src} into itself")
        info = await self.stat(src)
        if await self.exists(dst):
            raise AlreadyExistsError(f"{dst} already exists")
        await self._parent(dst)
        if info.is_file:
            await self.write(dst, await self.read_all(src), mode=WriteMode.CREATE)
        else:
            await self.mkdir(dst)
            async for entry in self.walk(src):
                target = dst.join(entry.path.relative_to(src))
                if entry.is_dir:
                    await self.mkdir(target)
                else:
                    await self.write(target, await self.read_all(entry.path), mode=WriteMode.CREATE)
        await self.delete(src, recursive=True)

    # -- review, apply, discard ----------------------------------------------------------------

    async def changes(self) -> dict[str, str]:
        """Each changed path and what apply would do there: ``"write"`` or ``"delete"``."""
        manifest, _ = await self._manifest()
        found = {path: "delete" for path in sorted(manifest.gone)}
        async for entry in self.layer.walk(VPath.ROOT):
            if entry.is_file and entry.path != MANIFEST:
                found[str(entry.path)] = "write"
        return found

    async def apply(self, paths: Iterable[VPath] | None = None) -> OverlayReport:
        """Write the layer into the base, file by file; a file whose base changed since the
        layer took it is a conflict and stays in the layer. ``paths``: only these changes
        (each a changed path of :meth:`changes`; others are left in the layer)."""
        report = OverlayReport()
        written: list[str] = []
        manifest, _ = await self._manifest()
        only = None if paths is None else {str(p) for p in paths}
        for key in sorted(manifest.gone):
            if only is not None and key not in only:
                continue
            path = VPath.parse(key)
            try:
                now = await self.base.stat(path)
            except (NotFoundError, NotADirectoryError_):
                now = None
            if (
                now is not None
                and now.is_file
                and manifest.taken.get(key, now.version) != now.version
            ):
                report.conflicts.append(key)
                continue
            if now is not None:
                await self.base.delete(path, recursive=True)
            await self._change(lambda m, k=key: (m.gone.discard(k), m.taken.pop(k, None)))
            report.applied.append(key)
        async for entry in self.layer.walk(VPath.ROOT):
            if entry.path == MANIFEST or (only is not None and entry.is_dir):
                continue
            if entry.is_dir:
                await self.base.makedirs(entry.path)
                continue
            key = str(entry.path)
            if only is not None and key not in only:
                continue
            if await self._apply_file(entry.path, manifest.taken.get(key)):
                report.applied.append(key)
                written.append(key)
            else:
                report.conflicts.append(key)
        if written:  # one update for all: what a kill leaves here is stale, never wrong
            await self._change(lambda m: [m.taken.pop(k, None) for k in written])
        if not report.conflicts and only is None:
            await self.discard()
        return report

    async def _apply_file(self, path: VPath, taken: str | None) -> bool:
        data = await self.layer.read_all(path)
        try:
            now: FileInfo | None = await self.base.stat(path)
        except (NotFoundError, NotADirectoryError_):
            now = None
        if now is not None and now.is_file and await self.base.read_all(path) == data:
            pass  # applied before a kill: only the layer's copy is left to drop
        elif (now.version if now is not None else None) != taken:
            return False
        else:
            await self.base.makedirs(path.parent)
            try:
                if taken is None:
                    await self.base.write(path, data, mode=WriteMode.CREATE)
                else:
                    await self.base.write(path, data, if_version=taken)
            except (ConflictError, AlreadyExistsError):
                return False
        await self.layer.delete(path)
        return True

    async def discard(self, paths: Iterable[VPath] | None = None) -> None:
        """Drop the layer: every change it holds is gone, the base is as it was. ``paths``:
        only these changes (files written, paths deleted); the rest stay."""
        if paths is None:
            for entry in await self.layer.list(VPath.ROOT):
                await self.layer.delete(entry.path, recursive=True)
            self._read.clear()
            return
        keys = {str(p) for p in paths}
        for key in sorted(keys):
            path = VPath.parse(key)
            try:
                if (await self.layer.stat(path)).is_file:
                    await self.layer.delete(path)
            except (NotFoundError, NotADirectoryError_):
                pass
            self._read.pop(key, None)

        def drop(m: _Manifest) -> None:
            for key in keys:
                m.gone.discard(key)
                m.taken.pop(key, None)

        await self._change(drop)


def _tagged(info: FileInfo, tag: str) -> FileInfo:
    if info.version is None:
        return info
    return FileInfo(info.path, info.kind, info.size, info.mtime, tag + info.version, info.labels)


def _untagged(version: str | None, tag: str) -> str | None:
    if version is None:
        return None
    return version[len(tag) :] if version.startswith(tag) else "\x00no such version"
