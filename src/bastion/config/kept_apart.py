"""What a workspace keeps for itself is never readable through one of its own mounts: the
change journal (every content any change held, whatever its labels) and the overlay layers
(every thread's unapplied work). A ``file:`` mount whose folder holds one of them would show
it, as plain bytes with the mount's labels, to whoever may read the mount; it is refused when
the workspace is opened, unless the policy blocks a folder on the way
(``limits.blocked_segments``, e.g. ``.bastion``), which no one may then reach."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from bastion.core.errors import ConfigurationError
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.ports import Store

__all__ = ["journal_file", "refuse_kept_in_mounts"]


def journal_file(raw: object, folder: Path) -> Path | None:
    """The file a workspace file's ``[journal]`` keeps the journal in (``None``: none, or a
    database)."""
    from bastion.workspace.journal.settings import JournalSettings

    settings = JournalSettings.parse(raw, folder)
    return settings.path if settings is not None and isinstance(settings.path, Path) else None


def refuse_kept_in_mounts(mounts: Iterable[Mount], policy: Policy, journal: Path | None) -> None:
    """Raise :class:`ConfigurationError` when ``journal`` (a file; a URL is elsewhere) or an
    overlay's layer folder lies inside the folder of a mount that shows it."""
    mounts = list(mounts)
    kept: list[tuple[str, Path]] = []
    if journal is not None:
        kept.append(("the change journal", Path(os.path.realpath(journal))))
    for mount in mounts:
        for layers in _layers_of(mount.store):
            kept.append((f"the overlay layer folder of {mount.prefix}", layers))
    for mount in mounts:
        folder = _folder(_base_of(mount.store))
        if folder is None:
            continue
        for what, where in kept:
            if where != folder and folder not in where.parents:
                continue
            inside = VPath(where.relative_to(folder).parts) if where != folder else VPath.ROOT
            if inside.is_root or policy.limits.blocked(inside) is None:
                raise ConfigurationError(
                    f"{what} lies inside the folder of mount {mount.prefix}, where whoever "
                    "may read the mount would read it; keep it outside the mounted folders "
                    '(or block its folder: [policy.limits] blocked_segments = [".bastion"])'
                )


def _unwrapped(store: Store) -> Iterable[Store]:
    """``store`` and the stores below its wrappers (time limits, labels, the journal)."""
    for _ in range(16):
        yield store
        inner = getattr(store, "inner", None)
        if not isinstance(inner, Store):
            return
        store = inner


def _base_of(store: Store) -> Store:
    """The store whose folder a mount shows: an overlay's base, else the store itself."""
    for found in _unwrapped(store):
        base = getattr(found, "base", None)
        if isinstance(base, Store):
            return base
    return store


def _layers_of(store: Store) -> list[Path]:
    found = []
    for below in _unwrapped(store):
        for name in ("layers", "layer"):
            layer = getattr(below, name, None)
            if isinstance(layer, Store) and (folder := _folder(layer)) is not None:
                found.append(folder)
    return found


def _folder(store: Store) -> Path | None:
    """The host folder a local store keeps its files in, else ``None``."""
    for found in _unwrapped(store):
        fd = getattr(found, "root_fd", None)
        if isinstance(fd, int):
            try:
                return Path(f"/proc/self/fd/{fd}").readlink()
            except OSError:
                return None
    return None
