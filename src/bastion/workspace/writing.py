"""Writes through one guarded store, shared by file operations and transfers: missing parents
made on demand, and the labels a file carries kept when it lands somewhere new."""

from __future__ import annotations

from bastion.core.errors import AccessDeniedError, AlreadyExistsError, NotFoundError
from bastion.core.guard import GuardedStore
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.sidecars import sidecar_of

__all__ = ["carry_labels", "make_dirs", "refuse_file_at", "write_file"]


async def write_file(
    guarded: GuardedStore,
    rel: VPath,
    data: bytes,
    mode: WriteMode,
    if_version: str | None,
    parents: bool,
) -> FileInfo:
    """Write ``rel``; when its parent is missing and ``parents``, create it and write again.
    A blind writer (one who may not read ``rel``) always gets its parents made: refusing would
    tell it which folders are there. Without ``parents``, a parent the principal is not shown (a
    folder of hidden entries only) is missing, as it is in a world without it: writing into it
    would tell that it is there."""
    if not parents and not rel.parent.is_root and not guarded.blind(rel):
        try:
            await guarded.stat(rel.parent)
        except NotFoundError:
            gone = VPath(guarded.mount.prefix.parts + rel.parent.parts)
            raise NotFoundError(
                f"parent directory {gone} does not exist",
                path=gone,
                mount=str(guarded.mount.prefix),
            ) from None
    try:
        return await guarded.write(rel, data, mode=mode, if_version=if_version)
    except NotFoundError:
        if rel.parent.is_root or not (parents or guarded.blind(rel)):
            raise
    await make_dirs(guarded, rel.parent)
    return await guarded.write(rel, data, mode=mode, if_version=if_version)


async def carry_labels(
    guarded: GuardedStore, rel: VPath, labels: Labels | None, head: bytes
) -> None:
    """Before a file with ``labels`` lands at ``rel``: write the sidecar that keeps it as
    hard to read as it was (a copy, a move, a backup; see ``GuardedStore.carried_labels``)."""
    sidecar = await guarded.carried_labels(rel, labels, head)
    if sidecar is not None:
        await write_file(guarded, sidecar_of(rel), sidecar, WriteMode.OVERWRITE, None, True)


async def make_dirs(guarded: GuardedStore, rel: VPath, *, exist_ok: bool = True) -> bool:
    """Create ``rel`` and its parents without stat (works on write-only mounts too); whether
    something was already at ``rel`` (a directory, or a file: see :func:`refuse_file_at`)."""
    for depth in range(1, len(rel.parts) + 1):
        try:
            await guarded.mkdir(VPath(rel.parts[:depth]))
        except AlreadyExistsError:
            if depth == len(rel.parts):
                if not exist_ok:
                    raise
                return True
    return False


async def refuse_file_at(guarded: GuardedStore, rel: VPath, shown: VPath) -> None:
    """Raise when the entry found at ``rel`` by a ``mkdir(exist_ok=True)`` is a file (as
    ``os.makedirs`` does): the directory asked for is not there, and saying it is would send
    the next write below it into a file. Nothing is said of an entry the principal may not
    see (the mkdir answers as it always has)."""
    try:
        found = await guarded.stat(rel)
    except (NotFoundError, AccessDeniedError):
        return
    if found.is_file:
        raise AlreadyExistsError(f"{shown} already exists and is a file; pick another name")
