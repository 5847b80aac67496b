"""An overlay with a layer per tenant and thread: one base, and under one layer store a
sub-folder for each tenant (``/tenants/n-<tenant>``) holding one for each of its threads
(``threads/t-<thread>``) and one for its work done outside any thread (``shared``).

The store does not know who calls it: :attr:`ThreadLayers.layer_of` answers the layer of the
call in progress (the workspace sets it to the caller's tenant and its own record of which
view acts in which thread). Each layer is an :class:`~bastion.stores.overlay.OverlayStore` of
its own, so a thread sees its own changes over the base and no other thread's, and a tenant
never reaches another tenant's layers, whatever thread id it names; applying or discarding one
layer leaves the others as they are.

Tenants and thread ids are untrusted strings: each is one folder name made of lower-case ASCII
letters, digits, ``-`` and ``_``, every other byte of its UTF-8 spelling escaped as ``%XY``
(so ``..``, ``/``, NUL, upper case and look-alike letters are spelt apart, even on a
case-insensitive disk), hashed past 120 characters.

The base is held as :attr:`ThreadLayers.base` and never as ``inner``: nothing that looks for
the host folder below a store (the sandbox's direct bind) may find the base through it.
"""

from __future__ import annotations

import builtins
import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote, urlsplit

from bastion.core.errors import ConfigurationError
from bastion.core.models import FileInfo, WriteMode
from bastion.core.mounts import Mount
from bastion.core.overlay_port import Layered, LayerKey
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores.folder import FolderStore
from bastion.stores.overlay import OverlayStore

__all__ = [
    "ThreadLayers",
    "default_layer_url",
    "layer_folder",
    "overlaid",
    "overlay_of",
]

_SEGMENT = 120
"""The longest name kept readable in its folder's name (longer ones are hashed)."""
_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_")
OPEN_LAYERS = 256
"""How many layers a :class:`ThreadLayers` keeps open in memory (the least recently used
beyond are dropped; a layer lives on its store, so the next call opens it again)."""
_DIRECT = LayerKey(None, None)
"""The layer of a call with no principal: the store used directly, outside any workspace."""


def _utf8(raw: str) -> bytes:
    return raw.encode("utf-8", "surrogatepass")  # a lone surrogate from Python: its own bytes


def _name(raw: str) -> str:
    """``raw`` as one folder name: plain bytes kept, every other one ``%XY`` (upper-case
    hex), hashed past :data:`_SEGMENT` characters. Distinct strings give distinct names, even
    compared without case."""
    name = "".join(chr(b) if b in _PLAIN else f"%{b:02X}" for b in _utf8(raw))
    if len(name) > _SEGMENT:
        name = name[:_SEGMENT] + "-" + hashlib.sha256(_utf8(raw)).hexdigest()[:16]
    return name


def _legacy_name(thread: str) -> str:
    """A thread's folder name before layers were kept per tenant (decision 0094)."""
    name = quote(_utf8(thread), safe="-_")
    if len(name) > _SEGMENT:
        name = name[:_SEGMENT] + "-" + hashlib.sha256(_utf8(thread)).hexdigest()[:16]
    return name


def layer_folder(thread: str | None, tenant: str | None) -> VPath:
    """The folder of ``tenant``'s layer of ``thread`` under the layer store:
    ``/tenants/n-<tenant>/threads/t-<thread>``, ``/tenants/n-<tenant>/shared`` outside any
    thread. ``tenant`` ``None`` (the store used directly, no principal) keeps the layout of
    before tenants: ``/threads/t-<thread>`` and ``/shared``; no workspace view reaches it."""
    if tenant is None:
        if thread is None:
            return VPath.parse("/shared")
        return VPath.parse("/threads").join(VPath.parse("/t-" + _legacy_name(thread)))
    top = VPath.parse("/tenants").join(VPath.parse("/n-" + _name(tenant)))
    if thread is None:
        return top.join(VPath.parse("/shared"))
    return top.join(VPath.parse("/threads")).join(VPath.parse("/t-" + _name(thread)))


class ThreadLayers(Store, Layered):
    """``base`` under a layer per tenant and thread, kept in ``layers``."""

    kind = "overlay"

    def __init__(self, base: Store, layers: Store, *, open_layers: int = OPEN_LAYERS) -> None:
        self.base = base
        self.layers = layers
        self.timeout = base.timeout
        self.layer_of: Callable[[], LayerKey] = lambda: _DIRECT
        """The layer of the call in progress (by default the store's own, outside any
        tenant and thread)."""
        self._open = max(1, open_layers)
        self._overlays: OrderedDict[LayerKey, OverlayStore] = OrderedDict()
        """The layers open now, least recently used first (a caller names as many tenants and
        threads as it likes: memory holds at most ``open_layers`` of them)."""
        self._made: set[LayerKey] = set()
        self._dropped: list[OverlayStore] = []
        """Layers closed while their read log still held versions in memory, flushed to
        their layer by the next call (what a later write was based on is never forgotten)."""

    @property
    def open_layers(self) -> int:
        """How many layers this store holds open in memory now."""
        return len(self._overlays)

    def describe(self) -> str:
        return f"overlay over {self.base.describe()} (a layer per tenant and thread)"

    def overlay(self, thread: str | None, *, tenant: str | None) -> OverlayStore:
        """``tenant``'s overlay of ``thread`` (made on first use)."""
        return self._of(LayerKey(tenant, thread))

    def _of(self, key: LayerKey) -> OverlayStore:
        found = self._overlays.pop(key, None)
        if found is None:
            folder = layer_folder(key.thread, key.tenant)
            found = OverlayStore(self.base, FolderStore(self.layers, folder))
        self._overlays[key] = found  # the most recently used, last
        while len(self._overlays) > self._open:
            old_key, old = self._overlays.popitem(last=False)
            self._made.discard(old_key)
            if old.reads.in_memory:
                self._dropped.append(old)
        return found

    async def _current(self) -> OverlayStore:
        while self._dropped:
            await self._dropped.pop().reads.flush()
        key = self.layer_of()
        if key not in self._made:  # the layer's folder, made once per layer
            await self.layers.makedirs(layer_folder(key.thread, key.tenant))
            self._made.add(key)
        return self._of(key)

    async def stat(self, path: VPath) -> FileInfo:
        return await (await self._current()).stat(path)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return await (await self._current()).read_range(path, offset, length)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        return await (await self._current()).read_file(path, offset, length, check=check)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        return await (await self._current()).write(path, data, mode=mode, if_version=if_version)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        await (await self._current()).delete(path, recursive=recursive)

    async def list(self, path: VPath) -> builtins.list[FileInfo]:
        return await (await self._current()).list(path)

    async def mkdir(self, path: VPath) -> None:
        await (await self._current()).mkdir(path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        await (await self._current()).rename(src, dst)


def default_layer_url(prefix: str) -> str:
    """Where ``overlay = true`` keeps a mount's layers: a folder under ``.bastion/overlays``
    next to the workspace file, named after the mount's prefix."""
    name = "-".join(VPath.parse(prefix).parts) or "root"
    return f"file:.bastion/overlays/{quote(name, safe='-_.')}"


def overlay_of(
    base: Store, layer_url: str, *, relative_to: str | os.PathLike[str] | None = None
) -> ThreadLayers:
    """``base`` under the layers kept by the store ``layer_url`` names (a ``file:`` folder is
    made when missing)."""
    from bastion.stores.registry import local_path, store_from_url

    url = layer_url.strip()
    parts = urlsplit(url)
    below = _folder_of(base)
    if parts.scheme.lower() == "file" and below is not None:  # refused before it is made
        start = Path(relative_to) if relative_to is not None else Path.cwd()
        _apart(below, Path(os.path.realpath(local_path(parts, start))))
    options = {"create": True} if parts.scheme.lower() == "file" else {}
    layers = store_from_url(url, relative_to=relative_to, **options)
    above = _folder_of(layers)
    if below is not None and above is not None:
        _apart(below, above)
    return ThreadLayers(base, layers)


def _apart(below: Path, above: Path) -> None:
    if below == above or below in above.parents or above in below.parents:
        raise ConfigurationError(
            "the overlay's layers and its base are one folder tree; keep the layers outside "
            'the base folder (overlay = "file:<another folder>")'
        )


def _folder_of(store: Store) -> Path | None:
    """The host folder a store keeps its files in (a local store's), else ``None``."""
    fd = getattr(store, "root_fd", None)
    if not isinstance(fd, int):
        return None
    try:
        return Path(f"/proc/self/fd/{fd}").readlink()
    except OSError:
        return None


def overlaid(
    mount: Mount, layer_url: str, relative_to: str | os.PathLike[str] | None = None
) -> Mount:
    """``mount`` with its store under overlay layers kept by ``layer_url``."""
    store = overlay_of(mount.store, layer_url, relative_to=relative_to)
    return replace(mount, store=store)
