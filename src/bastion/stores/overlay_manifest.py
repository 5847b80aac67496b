"""What an overlay's layer keeps besides the files (``bastion.stores.overlay``): the manifest
(the base versions the layer took, the whiteouts), cached while its version holds, and the log
of the base versions read through the overlay before the layer took a path.

Both live in the layer store, so several processes may share one layer: the manifest is one
small JSON file updated with conditional writes; the read log is kept in memory up to a bound
and, past it, moved into shard files of the layer (:data:`READS`), so a long thread that reads
many files keeps a bounded memory and loses none of what it read.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from bastion.core.errors import AlreadyExistsError, ConflictError, NotFoundError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = [
    "GONE",
    "MANIFEST",
    "READS",
    "Manifest",
    "ManifestCache",
    "ReadLog",
    "reserved",
    "snapshot_of",
]

MANIFEST = VPath.parse("/.bastion-overlay.json")
"""Where the layer keeps what it took from the base and what it deleted (never listed)."""
READS = VPath.parse("/.bastion-overlay-reads")
"""The folder of the read log's shards, once it outgrew memory (never listed)."""
GONE = VPath.parse("/.bastion-overlay-gone")
"""The folder of what each deleted base folder held when it was deleted (never listed)."""
_SHARDS = 64
"""Shard files of the read log: a flush writes at most this many, a lookup reads one."""
READS_KEPT = 4096
"""Read versions kept in memory before they are moved into the layer."""


def reserved(path: VPath) -> bool:
    """The overlay's own records: hidden from reads and listings, refused to writes."""
    return path == MANIFEST or (not path.is_root and "/" + path.parts[0] in _FOLDERS)


_FOLDERS = frozenset({str(READS), str(GONE)})


def snapshot_of(key: str) -> VPath:
    """Where the files a deleted base folder held (path -> version) are kept."""
    return GONE.join(VPath.parse("/" + hashlib.sha256(key.encode()).hexdigest() + ".json"))


@dataclass
class Manifest:
    taken: dict[str, str | None] = field(default_factory=dict)
    """Path -> the base's version when the layer took the path (``None``: absent there)."""
    gone: set[str] = field(default_factory=set)
    """Paths deleted over the base (whiteouts): they and everything under them are hidden."""
    made: set[str] = field(default_factory=set)
    """Folders made in the layer (``mkdir``): apply makes them in the base, empty or not."""

    def hides(self, path: VPath) -> bool:
        if not self.gone:
            return False
        return any("/" + "/".join(path.parts[:n]) in self.gone for n in range(1, path.depth + 1))

    def dump(self) -> bytes:
        raw = {"taken": self.taken, "gone": sorted(self.gone), "made": sorted(self.made)}
        return json.dumps(raw).encode()

    @classmethod
    def load(cls, data: bytes) -> Manifest:
        raw = json.loads(data)
        made = set(raw.get("made", ()))
        return cls(dict(raw.get("taken", {})), set(raw.get("gone", ())), made)


class ManifestCache:
    """The layer's manifest, parsed once per version: each call checks the version with one
    ``stat`` of the manifest (another process's update changes it) and reads the file again only
    when it changed. Callers get the shared copy and must not change it; :meth:`change` edits a
    copy and writes it conditionally."""

    def __init__(self, layer: Store) -> None:
        self._layer = layer
        self._held: tuple[str, Manifest] | None = None

    async def get(self) -> tuple[Manifest, str | None]:
        try:
            info = await self._layer.stat(MANIFEST)
        except NotFoundError:
            self._held = None
            return Manifest(), None
        if self._held is not None and self._held[0] == info.version:
            return self._held[1], info.version
        try:
            info, data = await self._layer.read_file(MANIFEST)
        except NotFoundError:  # dropped between the two calls
            self._held = None
            return Manifest(), None
        manifest = Manifest.load(data)
        if info.version is not None:
            self._held = (info.version, manifest)
        return manifest, info.version

    async def change(self, edit: Callable[[Manifest], object]) -> None:
        """Apply ``edit(manifest)`` with a conditional write (retried when another writer won)."""
        while True:  # no lock: callers may be on several event loops, threads, processes
            held, version = await self.get()
            manifest = copy.deepcopy(held)
            edit(manifest)
            try:
                if version is None:
                    info = await self._layer.write(MANIFEST, manifest.dump(), mode=WriteMode.CREATE)
                else:
                    info = await self._layer.write(MANIFEST, manifest.dump(), if_version=version)
            except (ConflictError, AlreadyExistsError):
                continue
            if info.version is not None:
                self._held = (info.version, manifest)
            return


_UNREAD = object()


class ReadLog:
    """The base version of each file when it was first read through the overlay, until the
    layer takes the path (what a later write of it was based on). At most ``kept`` entries
    stay in memory; the rest go to the layer's shard files, first read kept."""

    def __init__(self, layer: Store, kept: int = READS_KEPT) -> None:
        self._layer = layer
        self._kept = kept
        self._memory: dict[str, str | None] = {}

    @property
    def in_memory(self) -> int:
        """How many read versions this process holds in memory now."""
        return len(self._memory)

    def known(self, key: str, default: str | None) -> str | None:
        """The version ``key`` had when first read, if memory still holds it, else
        ``default`` (nothing is forgotten)."""
        return self._memory.get(key, default)

    async def note(self, key: str, version: str | None) -> None:
        """``key`` was read at ``version`` (a first read only counts)."""
        self._memory.setdefault(key, version)
        if len(self._memory) > self._kept:
            await self.flush()

    async def flush(self) -> None:
        """Move what memory holds into the shard files (a read there before stays)."""
        by_shard: dict[VPath, dict[str, str | None]] = {}
        for key, version in self._memory.items():
            by_shard.setdefault(_shard(key), {})[key] = version
        for shard, found in sorted(by_shard.items(), key=lambda item: str(item[0])):
            await self._edit(shard, _first_read(found))
        self._memory.clear()

    async def take(self, key: str, default: str | None) -> str | None:
        """The version ``key`` had when first read (``default`` if it was not), forgotten
        here: the layer records it from now on."""
        found: object = self._memory.pop(key, _UNREAD)
        shard = _shard(key)
        try:
            _, data = await self._layer.read_file(shard)
        except NotFoundError:
            pass
        else:
            stored = json.loads(data)
            if key in stored:
                await self._edit(shard, lambda held: held.pop(key, None))
                found = stored[key]  # read before what memory holds
        return default if found is _UNREAD else found  # type: ignore[return-value]

    async def _edit(self, shard: VPath, edit: Callable[[dict[str, str | None]], object]) -> None:
        await self._layer.makedirs(READS)
        while True:
            try:
                info, data = await self._layer.read_file(shard)
                held, version = json.loads(data), info.version
            except NotFoundError:
                held, version = {}, None
            edit(held)
            payload = json.dumps(held, sort_keys=True).encode()
            try:
                if version is None:
                    await self._layer.write(shard, payload, mode=WriteMode.CREATE)
                else:
                    await self._layer.write(shard, payload, if_version=version)
                return
            except (ConflictError, AlreadyExistsError):
                continue


def _first_read(found: dict[str, str | None]) -> Callable[[dict[str, str | None]], object]:
    def edit(held: dict[str, str | None]) -> None:
        for key, version in found.items():
            held.setdefault(key, version)

    return edit


def _shard(key: str) -> VPath:
    number = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % _SHARDS
    return READS.join(VPath.parse(f"/{number:02d}.json"))
