"""Checks and messages every store adapter shares, so that each says the same thing.

Pure functions: a store calls them where it holds what they need (under its own lock or
inside its own transaction); they decide nothing about storage.
"""

from __future__ import annotations

import errno
from typing import Any

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
    StoreError,
    UncheckedWriteError,
)
from bastion.core.models import Labels, WriteMode
from bastion.core.paths import VPath

__all__ = [
    "check_move",
    "check_range",
    "check_write",
    "conflict",
    "disk_fault",
    "labels_dict",
    "not_empty",
    "refuse_unchecked",
]


_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
_NO_PERMISSION = frozenset({errno.EACCES, errno.EPERM})


def disk_fault(code: int | None, path: VPath, *, permissions: bool = True) -> StoreError | None:
    """The error for a disk that is full, read-only, or refuses the store (by ``errno``
    ``code``), saying what to do; ``None`` for any other code. ``permissions=False`` where a
    permission error means something else (an object store's credentials)."""
    if code in _NO_SPACE:
        return StoreError(
            path=path, reason="no space left on the disk of this mount; free space and retry"
        )
    if code == errno.EROFS:
        return StoreError(
            f"{path}: the disk is read-only; writes need it mounted read-write (ask an operator)",
            path=path,
        )
    if permissions and code in _NO_PERMISSION:
        return StoreError(
            f"{path}: the store has no permission for this file on disk; "
            "fix its permissions (ask an operator)",
            path=path,
        )
    return None


def check_range(offset: int, length: int | None) -> None:
    if offset < 0 or (length is not None and length < 0):
        raise ValueError("offset and length must be non-negative")


def conflict(path: VPath, if_version: str) -> ConflictError:
    return ConflictError(
        f"{path} changed since version {if_version}; read it again and retry", path=path
    )


def not_empty(path: VPath) -> DirectoryNotEmptyError:
    return DirectoryNotEmptyError(
        f"{path} is not empty; pass recursive=True to delete it and its contents",
        path=path,
    ).needing("recursive", True)


def check_write(path: VPath, mode: WriteMode, if_version: str | None, current: str | None) -> None:
    """Refuse a write that ``mode`` or ``if_version`` forbid. ``current`` is the version of
    the file at ``path`` now, ``None`` when there is none (the caller refuses a directory)."""
    if current is not None and mode is WriteMode.CREATE:
        raise AlreadyExistsError(path=path)
    if if_version is not None and current != if_version:
        raise conflict(path, if_version)


def refuse_unchecked(path: VPath, mode: WriteMode, if_version: str | None) -> None:
    """Refuse a write whose condition this store cannot check against other processes: an
    expected version, a create-only write, an append (a read-modify-write). Called by the
    stores that would otherwise check it within one process only and pretend."""
    if if_version is not None or mode is not WriteMode.OVERWRITE:
        raise UncheckedWriteError(
            f"{path}: this mount cannot check versions or existing files across processes, so "
            "if_version, create-only writes and appends are refused; overwrite the whole file",
            path=path,
        )


def check_move(src: VPath, dst: VPath) -> None:
    """Refuse a move of the root, to the root, or into the moved entry itself."""
    if src.is_root or dst.is_root:
        raise IsADirectoryError_("cannot move the store root")
    if dst.is_relative_to(src):
        raise NotADirectoryError_(f"cannot move {src} into itself", path=src)


def labels_dict(labels: Labels) -> dict[str, Any]:
    """``labels`` as JSON-ready data (sets sorted, so equal labels encode alike)."""
    return {
        "tenant": labels.tenant,
        "classification": labels.classification,
        "roles": sorted(labels.roles),
        "tags": sorted(labels.tags),
    }
