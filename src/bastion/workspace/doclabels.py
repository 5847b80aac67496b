"""Document labels on every path, not only in the index.

A document's labels are its store's (or its mount's) labels tightened by its own metadata:
the front matter of a Markdown file, and a sidecar file ``<name>.labels.yaml`` next to any
file (``classification``, ``roles``, ``tags``; see ``bastion.knowledge.labels``). The guard
decides every read, listing, grep and search on ``FileInfo.labels``, so :class:`DocumentLabels`
wraps each mount's store and fills them in: a file whose front matter says ``confidential``
is hidden from a reader cleared for ``internal`` whichever call asks, and so is its sidecar
(which would otherwise name it).

Labels are worked out once per file version (the head of a Markdown file is read for its front
matter; the sidecar is looked up), and cached.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import yaml

from bastion.core.errors import BastionError, NotFoundError, UnsupportedFileError
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.core.principal import Classifications

__all__ = ["SIDECAR_SUFFIX", "DocumentLabels", "labelled_file_of"]

SIDECAR_SUFFIX = ".labels.yaml"
_HEAD = 64 * 1024
_CACHE = 16_384
_MARKDOWN = (".md", ".markdown")
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def labelled_file_of(path: VPath) -> VPath | None:
    """The file a sidecar path describes (``a.pdf.labels.yaml`` -> ``a.pdf``), else ``None``."""
    name = path.name
    if name.endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX):
        return path.parent.join(VPath.parse("/" + name[: -len(SIDECAR_SUFFIX)]))
    return None


class DocumentLabels(Store):
    """``inner`` with ``FileInfo.labels`` set from each file's metadata (module docstring)."""

    keeps_labels = True
    timeout = None  # the inner store carries the mount's timeout

    def __init__(self, inner: Store, base: Labels, classifications: Classifications) -> None:
        self.inner = inner
        self.kind = inner.kind
        self._base = base
        self._order = classifications
        self._stores_labels = bool(getattr(inner, "keeps_labels", False))
        self._cache: OrderedDict[tuple[Any, ...], Labels] = OrderedDict()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def describe(self) -> str:
        return self.inner.describe()

    # -- labels ------------------------------------------------------------------------------

    async def _labelled(
        self, info: FileInfo, siblings: dict[str, FileInfo] | None = None
    ) -> FileInfo:
        """``info`` with its document labels; ``siblings`` (a listing of its directory, by
        name) saves looking the sidecar up."""
        if not info.is_file:
            return info
        target = labelled_file_of(info.path)
        if target is not None:  # a sidecar shows only to those who may see its file
            try:
                # ``info`` is the file's sidecar: no need to look it up again
                described = await self._labelled(
                    await self.inner.stat(target), {info.path.name: info}
                )
            except (NotFoundError, UnsupportedFileError):  # gone, or a link: never followed
                described = None
            if described is not None and described.is_file:
                return _with_labels(info, described.labels)
        base = info.labels if self._stores_labels and info.labels is not None else self._base
        if siblings is None:
            sidecar = await self._sidecar_info(info.path)
        else:
            found = siblings.get(info.path.name + SIDECAR_SUFFIX)
            sidecar = found if found is not None and found.is_file else None
        key = (info.path.parts, info.version, info.size, info.mtime, base, _stamp(sidecar))
        labels = self._cache.get(key)
        if labels is None:
            labels = await self._compute(info, base, sidecar)
            if len(self._cache) >= _CACHE:
                self._cache.popitem(last=False)
            self._cache[key] = labels
        return _with_labels(info, labels)

    async def _sidecar_info(self, path: VPath) -> FileInfo | None:
        try:
            found = await self.inner.stat(
                path.parent.join(VPath.parse("/" + path.name + SIDECAR_SUFFIX))
            )
        except BastionError:
            return None
        return found if found.is_file else None

    async def _compute(self, info: FileInfo, base: Labels, sidecar: FileInfo | None) -> Labels:
        from bastion.knowledge.labels import document_labels

        labels = base
        if info.path.name.lower().endswith(_MARKDOWN):
            head = await self.inner.read_range(info.path, 0, _HEAD)
            labels = document_labels(labels, _front_matter(head), self._order)
        if sidecar is not None:
            raw = await self.inner.read_range(sidecar.path, 0, _HEAD)
            labels = document_labels(labels, _mapping(raw), self._order)
        return labels

    # -- the store port ----------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self._labelled(await self.inner.stat(path))

    async def list(self, path: VPath) -> list[FileInfo]:
        infos = await self.inner.list(path)
        siblings = {info.path.name: info for info in infos}
        return [await self._labelled(info, siblings) for info in infos]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        info = await self.stat(path)  # labels first: the check sees them before any byte
        if check is not None and info.is_file:
            check(info)
        found, data = await self.inner.read_file(path, offset, length)
        if found.version != info.version:  # changed in between: check the new version
            return await self.read_file(path, offset, length, check=check)
        return info, data

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return await self.inner.read_range(path, offset, length)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        info = await self.inner.write(path, data, mode=mode, if_version=if_version)
        return await self._labelled(info)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        await self.inner.delete(path, recursive=recursive)

    async def mkdir(self, path: VPath) -> None:
        await self.inner.mkdir(path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        await self.inner.rename(src, dst)


def _stamp(info: FileInfo | None) -> tuple[Any, ...] | None:
    return None if info is None else (info.version, info.size, info.mtime)


def _with_labels(info: FileInfo, labels: Labels | None) -> FileInfo:
    return FileInfo(info.path, info.kind, info.size, info.mtime, info.version, labels)


def _mapping(raw: bytes) -> dict[str, Any]:
    """A YAML mapping; metadata that is not one classifies the file at the highest level
    (an unknown classification counts as the highest), so a broken label never opens it."""
    broken = {"classification": "\x00unreadable"}
    try:
        loaded = yaml.load(raw.decode("utf-8", "replace"), Loader=_LOADER)  # noqa: S506 - safe
    except (yaml.YAMLError, RecursionError):
        return broken
    if loaded is None:  # an empty block or file: no labels
        return {}
    return loaded if isinstance(loaded, dict) else broken


def _front_matter(head: bytes) -> dict[str, Any]:
    """The front matter as ingest reads it (``knowledge.ingest.formats.markdown``)."""
    from bastion.knowledge.ingest.formats.markdown import FRONT_MATTER

    match = FRONT_MATTER.match(head.decode("utf-8", "replace"))
    if match is None:
        return {}
    return _mapping((match.group(1) or "").encode())
