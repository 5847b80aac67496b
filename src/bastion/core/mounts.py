"""The mount table: prefix -> (store, scope, default labels), resolved by longest prefix."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from bastion.core.errors import ConfigurationError, InvalidPathError, NoMountError
from bastion.core.models import Labels, Scope
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.core.timeouts import TimedStore

__all__ = ["Mount", "MountTable"]


@dataclass(frozen=True, eq=False)
class Mount:
    """A store mounted at ``prefix`` with a scope and the labels its documents get by default."""

    prefix: VPath
    store: Store
    scope: Scope = Scope.READ_WRITE
    labels: Labels = field(default_factory=Labels)
    description: str = ""
    """One line for the filesystem map (what lives here)."""
    timeout: float | None = None
    """Seconds to wait for one store call before the mount is reported unresponsive:
    ``None`` takes the store's own default (``Store.timeout``), ``math.inf`` waits forever."""

    def __post_init__(self) -> None:
        limit = self.store.timeout if self.timeout is None else self.timeout
        if limit is not None and limit <= 0:
            raise ConfigurationError(f"mount {self.prefix}: timeout must be positive")
        if limit is not None and math.isfinite(limit) and not _bounded(self.store):
            object.__setattr__(self, "store", TimedStore(self.store, limit, str(self.prefix)))

    @classmethod
    def of(
        cls,
        prefix: str,
        store: Store,
        scope: Scope | str = Scope.READ_WRITE,
        *,
        labels: Labels | None = None,
        description: str = "",
        timeout: float | None = None,
    ) -> Mount:
        try:
            parsed = VPath.parse(prefix)
        except InvalidPathError as exc:
            raise ConfigurationError(f"mount prefix {prefix!r}: {exc}") from exc
        try:
            scope_value = Scope(scope)
        except ValueError:
            known = ", ".join(s.value for s in Scope)
            raise ConfigurationError(
                f"mount {prefix}: unknown scope {scope!r}; use {known}"
            ) from None
        return cls(parsed, store, scope_value, labels or Labels(), description, timeout)

    def to_store_path(self, path: VPath) -> VPath:
        return path.relative_to(self.prefix)


def _bounded(store: Store) -> bool:
    """True when ``store`` or a store it wraps (``.inner``) already carries a timeout."""
    seen = 0
    probe: object = store
    while probe is not None and seen < 8:
        if isinstance(probe, TimedStore):
            return True
        probe, seen = getattr(probe, "inner", None), seen + 1
    return False


class MountTable:
    """Validated mounts. Resolution is one pure function: longest prefix, per segment."""

    def __init__(self, mounts: Iterable[Mount]) -> None:
        self._mounts: tuple[Mount, ...] = tuple(sorted(mounts, key=lambda m: m.prefix.parts))
        if not self._mounts:
            raise ConfigurationError("a workspace needs at least one mount")
        seen: set[VPath] = set()
        for mount in self._mounts:
            if mount.prefix in seen:
                raise ConfigurationError(f"two mounts at {mount.prefix}")
            seen.add(mount.prefix)
        # Keyed by the prefix's parts; the prefix lengths in use, longest first, so the first
        # hit is the longest prefix.
        self._by_parts = {m.prefix.parts: m for m in self._mounts}
        self._lengths = sorted({len(m.prefix.parts) for m in self._mounts}, reverse=True)

    def __iter__(self) -> Iterator[Mount]:
        return iter(self._mounts)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self._mounts

    def find(self, path: VPath) -> Mount | None:
        """The mount whose prefix is the longest per-segment prefix of ``path``."""
        parts = path.parts
        depth = len(parts)
        for length in self._lengths:
            if length <= depth:
                mount = self._by_parts.get(parts[:length])
                if mount is not None:
                    return mount
        return None

    def resolve(self, path: VPath) -> Mount:
        mount = self.find(path)
        if mount is None:
            where = ", ".join(str(m.prefix) for m in self._mounts)
            raise NoMountError(f"{path} is not under any mount; mounted: {where}")
        return mount

    def is_virtual_dir(self, path: VPath) -> bool:
        """True when ``path`` is a proper ancestor of some mount prefix (a directory that
        exists because something is mounted below it)."""
        n = len(path.parts)
        return any(
            len(m.prefix.parts) > n and m.prefix.parts[:n] == path.parts for m in self._mounts
        )
