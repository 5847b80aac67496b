"""Binding a large read-only local folder into the view instead of copying it.

A read-only mount on a host folder (:class:`~bastion.sandbox.port.HostFolder`: the local store)
is bound from that folder (read-only, by descriptor) only when binding shows the principal
exactly what the guarded view shows: the folder holds plain files and folders only (no links,
devices, hard links), all readable by the sandbox's user (the folder itself and everything in
it readable by others, the folders above it open to others), every name a workspace name, no
other mount lies below it, and the guarded listing of the mount names every one of them
(nothing hidden by policy, labels or limits). Otherwise the mount is copied like any other:
the copy is the sandbox user's, so a mount over a private folder (mode 0700) is readable too.
The folder is walked by descriptor, iteratively (``bastion.sandbox.tree``).
``docs/sandbox.md`` names the race this leaves (a file added to the folder while a command
runs).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from bastion.core.errors import OperationError
from bastion.core.models import Scope
from bastion.core.mounts import Mount
from bastion.core.overlay_port import Layered, Overlay
from bastion.core.paths import VPath
from bastion.sandbox.port import HostFolder
from bastion.sandbox.tree import Item, Walk

__all__ = ["bindable"]

_MAX_ENTRIES = 1_000_000


def bindable(mount: Mount, visible: set[VPath], mounts: Iterable[Mount]) -> int | None:
    """A new descriptor of ``mount``'s host folder when it may be bound as it is, else
    ``None``. ``visible`` holds the entries the guarded listing shows under the mount, as
    paths relative to it. The caller closes the descriptor."""
    if mount.scope is not Scope.READ_ONLY:
        return None
    n = len(mount.prefix.parts)
    if any(len(m.prefix.parts) > n and m.prefix.parts[:n] == mount.prefix.parts for m in mounts):
        return None
    root = _root_fd(mount)
    if root is None:
        return None
    fd = os.open(f"/proc/self/fd/{root}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if _reachable(fd) and _plain_tree(fd) == visible:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _root_fd(mount: Mount) -> int | None:
    store = mount.store
    while not isinstance(store, HostFolder):
        if isinstance(store, Overlay | Layered):  # its host folder is a base never written
            return None
        inner = getattr(store, "inner", None)
        if inner is None:
            return None
        store = inner
    fd = store.root_fd  # the store's own descriptor of its root
    return fd if isinstance(fd, int) else None


def _reachable(fd: int) -> bool:
    """True when the folder ``fd`` names is readable by others and every folder above it is
    open to others (bubblewrap, as the sandbox's user, resolves the folder by its path)."""
    if os.fstat(fd).st_mode & 0o005 != 0o005:
        return False
    path = Path(f"/proc/self/fd/{fd}").readlink()
    return all(parent.stat().st_mode & 0o001 for parent in path.parents)


class _NotPlain(Exception):
    """An entry that binding would show differently from the guarded view."""


def _plain_tree(fd: int) -> set[VPath] | None:
    """Every entry under the folder ``fd``, relative; ``None`` when one is anything but a
    plain, world-readable file or folder with a workspace name (or there are too many to
    compare)."""
    found: set[VPath] = set()
    try:
        for item in (walk := Walk(fd, VPath.ROOT, _path)):
            info = item.info
            if stat.S_ISDIR(info.st_mode):
                if info.st_mode & 0o005 != 0o005:
                    return None
            elif not stat.S_ISREG(info.st_mode) or info.st_nlink > 1 or not info.st_mode & 0o004:
                return None
            found.add(_path(item))
            if len(found) > _MAX_ENTRIES:
                return None
    except _NotPlain:
        return None
    return None if walk.unread else found


def _path(item: Item[VPath]) -> VPath:
    """The entry's path, when its name is a workspace name as it stands."""
    try:
        path = item.parent.child(item.name)
        item.name.encode("utf-8")
    except (OperationError, UnicodeEncodeError):
        raise _NotPlain from None
    if path.name != item.name:
        raise _NotPlain
    return path
