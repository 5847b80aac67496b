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
import contextlib
import json
from collections.abc import Callable, Iterable

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
from bastion.core.overlay_port import LayerChange, Overlay, OverlayReport
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores.overlay_manifest import (
    MANIFEST,
    READS,
    READS_KEPT,
    Manifest,
    ManifestCache,
    ReadLog,
    reserved,
    snapshot_of,
)

__all__ = ["MANIFEST", "OverlayReport", "OverlayStore"]

_LAYER, _BASE = "l:", "b:"
"""Version prefixes: a layer's version never equals a base's, so every write changes it."""


class OverlayStore(Store, Overlay):
    """``layer`` over ``base``: reads see both, writes go to the layer alone. ``reads_kept``:
    how many base versions read through the overlay are held in memory (the rest go to the
    layer, see :class:`~bastion.stores.overlay_manifest.ReadLog`)."""

    kind = "overlay"

    def __init__(self, base: Store, layer: Store, *, reads_kept: int = READS_KEPT) -> None:
        self.base = base
        self.layer = layer
        self.timeout = base.timeout
        self._manifests = ManifestCache(layer)
        self.reads = ReadLog(layer, reads_kept)
        """Base versions read through the overlay (what a later write was based on)."""

    def describe(self) -> str:
        return f"overlay over {self.base.describe()}"

    # -- the manifest ----------------------------------------------------------------------

    async def _manifest(self) -> tuple[Manifest, str | None]:
        return await self._manifests.get()

    async def _change(self, edit: Callable[[Manifest], object]) -> None:
        await self._manifests.change(edit)

    # -- reading -----------------------------------------------------------------------------

    @staticmethod
    def _reserved(path: VPath) -> None:
        if reserved(path):
            raise NotFoundError(f"{path} not found")

    async def _layer_stat(self, path: VPath) -> FileInfo | None:
        """The layer's entry, ``None`` when it has none (a file above the path in the layer
        shadows the base: "not a directory")."""
        try:
            return await self.layer.stat(path)
        except NotFoundError:
            return None

    async def _base_stat(self, path: VPath, manifest: Manifest) -> FileInfo | None:
        if manifest.hides(path):
            return None
        try:
            return await self.base.stat(path)
        except (NotFoundError, NotADirectoryError_):
            return None

    async def _locate(self, path: VPath) -> tuple[Store, FileInfo]:
        """Which store answers for ``path``, and its entry. A file of the base the layer has
        not taken (the manifest names every file the layer holds) is the base's without asking
        the layer; anything else is the layer's entry first."""
        if path.is_root:
            info = await self._layer_stat(path)
            return (self.layer, info) if info else (self.base, FileInfo(path, EntryKind.DIRECTORY))
        manifest, _ = await self._manifest()
        key = str(path)
        if manifest.hides(path) or key in manifest.taken or key in manifest.made:
            info = await self._layer_stat(path)
            if info is not None:
                return self.layer, info
            if manifest.hides(path):
                raise NotFoundError(f"{path} not found")
        try:
            below = await self.base.stat(path)
        except (NotFoundError, NotADirectoryError_):
            if (info := await self._layer_stat(path)) is not None:
                return self.layer, info
            raise
        if below.is_file:
            await self.reads.note(key, below.version)
            return self.base, below
        info = await self._layer_stat(path)  # a folder in both: the layer's entry
        return (self.layer, info) if info is not None else (self.base, below)

    async def stat(self, path: VPath) -> FileInfo:
        self._reserved(path)
        store, info = await self._locate(path)
        return _tagged(info, _LAYER if store is self.layer else _BASE)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        self._reserved(path)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be non-negative")
        store, info = await self._locate(path)
        if info.is_dir:
            raise IsADirectoryError_(f"{path} is a directory")
        return await store.read_range(path, offset, length)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """One lookup, then the store that holds the file reads it (its info and bytes agree)."""
        self._reserved(path)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be non-negative")
        store, _ = await self._locate(path)
        tag = _LAYER if store is self.layer else _BASE

        def tagged_check(info: FileInfo) -> None:
            if check is not None:
                check(_tagged(info, tag))

        info, data = await store.read_file(path, offset, length, check=tagged_check)
        return _tagged(info, tag), data

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
                if not reserved(entry.path):
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
        if reserved(path):
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
        seen = await self.reads.take(key, below.version if below is not None else None)
        if below is None:
            seen = None
        revived = key in manifest.gone and await self._base_is_file(path)

        def take(m: Manifest) -> None:
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
        await self._change(lambda m: m.made.add(str(path)))  # apply makes it in the base
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
        seen = None
        if below is not None and below.is_file:
            seen = await self.reads.take(key, below.version)
        elif below is not None:  # what it holds now: a file added or changed since conflicts
            await self._snapshot(path, manifest)

        def forget(m: Manifest) -> None:
            for taken in [t for t in m.taken if t == key or t.startswith(key + "/")]:
                if m.taken[taken] is None:  # nothing of it in the base: nothing to apply
                    del m.taken[taken]
            m.made.difference_update([d for d in m.made if d == key or d.startswith(key + "/")])
            if below is not None:
                m.gone.add(key)
                if below.is_file:
                    m.taken.setdefault(key, seen)

        await self._change(forget)

    async def _snapshot(self, folder: VPath, manifest: Manifest) -> None:
        held: dict[str, str | None] = {}
        async for entry in self.base.walk(folder):
            key = str(entry.path)
            if entry.is_file and not manifest.hides(entry.path):
                taken = manifest.taken.get(key)
                held[key] = taken if taken is not None else self.reads.known(key, entry.version)
        await self.layer.makedirs(snapshot_of(str(folder)).parent)
        await self.layer.write(snapshot_of(str(folder)), json.dumps(held).encode())

    async def _folder_changed(self, folder: VPath) -> bool:
        """The base folder deleted in the layer holds a file added or changed since."""
        try:
            _, data = await self.layer.read_file(snapshot_of(str(folder)))
        except NotFoundError:
            return False  # deleted before snapshots were kept, or a kill: as before
        held = json.loads(data)
        try:
            async for entry in self.base.walk(folder):
                if entry.is_file and held.get(str(entry.path), "\x00") != entry.version:
                    return True
        except (NotFoundError, NotADirectoryError_):
            return False
        return False

    async def _drop_snapshot(self, key: str) -> None:
        with contextlib.suppress(NotFoundError):
            await self.layer.delete(snapshot_of(key))

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

    async def _held(self) -> builtins.list[FileInfo]:
        """The layer's entries, its own records left out."""
        return [e async for e in self.layer.walk(VPath.ROOT) if not reserved(e.path)]

    async def changes(self) -> dict[str, str]:
        """Each changed path and what apply would do there: ``"write"``, ``"delete"`` or
        ``"mkdir"`` (a folder made in the layer and empty there, that the base lacks: a folder
        holding changes is made by applying them)."""
        manifest, _ = await self._manifest()
        found = {path: "delete" for path in sorted(manifest.gone)}
        held = await self._held()
        for entry in held:
            if entry.is_file:
                found[str(entry.path)] = "write"
        for key in sorted(_empty_made(manifest, held)):
            if key not in found and not await self._base_is_dir(VPath.parse(key), manifest):
                found[key] = "mkdir"  # (a folder deleted, then made again: "delete")
        return found

    async def _base_is_dir(self, path: VPath, manifest: Manifest) -> bool:
        below = await self._base_stat(path, manifest)
        return below is not None and below.is_dir

    async def review(self) -> dict[str, LayerChange]:
        """Each change with what it is over the base now and whether apply would refuse it."""
        manifest, _ = await self._manifest()
        out: dict[str, LayerChange] = {}
        for key, action in (await self.changes()).items():
            try:
                now: FileInfo | None = await self.base.stat(VPath.parse(key))
            except (NotFoundError, NotADirectoryError_):
                now = None
            taken = manifest.taken.get(key, now.version if now is not None else None)
            if action == "delete":
                status, conflict = (
                    "deleted",
                    now is not None and now.is_file and now.version != taken,
                )
                if now is not None and now.is_dir:
                    conflict = await self._folder_changed(VPath.parse(key))
            elif action == "mkdir":
                status, conflict = "added", now is not None and now.is_file
            else:
                status = "added" if now is None else "modified"
                conflict = (now.version if now is not None else None) != taken
                conflict = conflict and not await self._same(VPath.parse(key), now)
            out[key] = LayerChange(action, status, conflict)
        return out

    async def sides(self, path: VPath, limit: int) -> tuple[bytes | None, bytes | None, bool]:
        found: list[FileInfo | None] = []
        for store in (self.base, self.layer):
            try:
                info: FileInfo | None = await store.stat(path)
            except (NotFoundError, NotADirectoryError_):
                info = None
            found.append(info if info is not None and info.is_file else None)
        if any(f is not None and f.size > limit for f in found):
            return None, None, True
        old = await self.base.read_all(path) if found[0] is not None else None
        new = await self.layer.read_all(path) if found[1] is not None else None
        return old, new, False

    async def _same(self, path: VPath, now: FileInfo | None) -> bool:
        """The base already holds what the layer holds there (an apply killed after it)."""
        if now is None or not now.is_file:
            return False
        return await self.base.read_all(path) == await self.layer.read_all(path)

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
            ) or (now is not None and now.is_dir and await self._folder_changed(path)):
                report.conflicts.append(key)
                continue
            if now is not None:
                await self.base.delete(path, recursive=True)
            await self._change(_deleted(key))
            await self._drop_snapshot(key)
            report.applied.append(key)
        made: list[str] = []
        held = await self._held()
        empty = _empty_made(manifest, held)
        for entry in held:
            key = str(entry.path)
            if entry.is_dir:
                if key in empty and (only is None or key in only):
                    try:
                        await self.base.makedirs(entry.path)
                    except (AlreadyExistsError, NotADirectoryError_):  # a file there since
                        report.conflicts.append(key)
                        continue
                    made.append(key)
                    if key not in report.applied:
                        report.applied.append(key)
                elif only is None:
                    await self.base.makedirs(entry.path)
                continue
            if only is not None and key not in only:
                continue
            if await self._apply_file(entry.path, manifest.taken.get(key)):
                report.applied.append(key)
                written.append(key)
            else:
                report.conflicts.append(key)
        if written or made:  # one update for all: what a kill leaves here is stale, never wrong
            await self._change(lambda m: _applied(m, written, made))
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
        only these changes (files written, paths deleted, folders made); the rest stay. What
        was read through the overlay is kept (a later write is still based on it)."""
        if paths is None:
            for entry in await self.layer.list(VPath.ROOT):
                if entry.path != READS:  # what was read stays known
                    await self.layer.delete(entry.path, recursive=True)
            return
        keys = {str(p) for p in paths}
        for key in sorted(keys):
            path = VPath.parse(key)
            try:
                held = await self.layer.stat(path)
                if held.is_file or not await self.layer.list(path):
                    await self.layer.delete(path)
            except (NotFoundError, NotADirectoryError_):
                pass

        for key in keys:
            await self._drop_snapshot(key)

        def drop(m: Manifest) -> None:
            for key in keys:
                m.gone.discard(key)
                m.made.discard(key)
                m.taken.pop(key, None)

        await self._change(drop)


def _empty_made(manifest: Manifest, held: builtins.list[FileInfo]) -> set[str]:
    """The folders made in the layer (``mkdir``) that hold nothing there."""
    above = {str(p) for e in held for p in _ancestors(e.path)}
    return {str(e.path) for e in held if e.is_dir and str(e.path) in manifest.made} - above


def _ancestors(path: VPath) -> builtins.list[VPath]:
    return [VPath.parse("/" + "/".join(path.parts[:n])) for n in range(1, path.depth)]


def _deleted(key: str) -> Callable[[Manifest], None]:
    def edit(manifest: Manifest) -> None:
        manifest.gone.discard(key)
        manifest.taken.pop(key, None)

    return edit


def _applied(manifest: Manifest, written: builtins.list[str], made: builtins.list[str]) -> None:
    for key in written:
        manifest.taken.pop(key, None)
    manifest.made.difference_update(made)


def _tagged(info: FileInfo, tag: str) -> FileInfo:
    if info.version is None:
        return info
    version = tag + info.version
    return FileInfo(
        info.path, info.kind, info.size, info.mtime, version, info.labels, info.changed_ns
    )


def _untagged(version: str | None, tag: str) -> str | None:
    if version is None:
        return None
    return version[len(tag) :] if version.startswith(tag) else "\x00no such version"
