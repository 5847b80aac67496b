"""Tree changes around entries a principal may not see.

Hidden entries are not there for the principal (docs/security.md, "existence oracles"): a
recursive delete or move takes what the principal sees and leaves the rest where it is, and a
folder that holds nothing the principal may see is not shown. The guard passes ``sees``, its
own visibility decision for a store entry; these functions work on the raw store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import suppress

from bastion.core.errors import (
    AlreadyExistsError,
    DirectoryNotEmptyError,
    NotFoundError,
    OperationError,
    UnsupportedFileError,
)
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = [
    "delete_visible",
    "file_above",
    "move_visible",
    "shown_dir",
    "shown_paths",
    "unshown_folder",
]

Sees = Callable[[FileInfo], bool]


async def visible_tree(store: Store, path: VPath, sees: Sees) -> tuple[list[VPath], list[VPath]]:
    """The folders and files under ``path`` that the principal sees (nothing below a hidden
    folder), folders parents first."""
    folders: list[VPath] = []
    files: list[VPath] = []
    hidden: set[tuple[str, ...]] = set()
    async for info in store.walk(path):
        parts = info.path.parts
        if any(parts[:depth] in hidden for depth in range(1, len(parts))):
            continue  # below a hidden folder
        if not sees(info) or (info.is_dir and not await shown_dir(store, info.path, sees)):
            if info.is_dir:  # a folder of hidden entries only is not there: not carried
                hidden.add(parts)
            continue
        (folders if info.is_dir else files).append(info.path)
    folders.sort(key=lambda p: len(p.parts))
    return folders, files


async def _prune(store: Store, folders: list[VPath]) -> None:
    """Delete these folders, deepest first, where they are now empty."""
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with suppress(DirectoryNotEmptyError, NotFoundError):
            await store.delete(folder)


async def delete_visible(store: Store, path: VPath, sees: Sees) -> None:
    """Delete what the principal sees under ``path``; the rest stays where it is."""
    folders, files = await visible_tree(store, path, sees)
    for file in files:
        await store.delete(file)
    await _prune(store, [path, *folders])


async def move_visible(store: Store, src: VPath, dst: VPath, sees: Sees) -> None:
    """Move what the principal sees under ``src`` to ``dst``; the rest stays where it is."""
    folders, files = await visible_tree(store, src, sees)
    await store.mkdir(dst)
    for folder in folders:
        with suppress(AlreadyExistsError):
            await store.mkdir(dst.join(folder.relative_to(src)))
    for file in files:
        await store.rename(file, dst.join(file.relative_to(src)))
    await _prune(store, [src, *folders])


async def shown_dir(store: Store, path: VPath, sees: Sees) -> bool:
    """Folder names are content too: a folder is there for the principal when it is empty or
    holds something the principal may see (stops at the first such entry)."""
    try:
        entries = await store.entries(path)  # labels only for the entries looked at
    except OperationError:
        return True  # the call that follows says what is wrong
    if not entries:
        return True
    # files first (one stat each, usually one is enough), then folders, depth first
    for entry in sorted(entries, key=lambda e: e.is_dir):
        try:
            info = await store.stat(entry.path)
        except OperationError:
            continue  # gone meanwhile, or cannot be served: not something to show
        if not sees(info):
            continue
        if not info.is_dir or await shown_dir(store, info.path, sees):
            return True
    return False


async def unshown_folder(
    store: Store, path: VPath, sees: Sees, info: FileInfo | None = None
) -> bool:
    """True when ``path`` is a folder (``info``: its entry, when already looked up) that holds
    entries and none the principal sees: it is not there for the principal, on any call."""
    if path.is_root:
        return False
    if info is None:
        try:
            info = await store.stat(path)
        except OperationError:
            return False
    return info.is_dir and not await shown_dir(store, path, sees)


async def file_above(store: Store, path: VPath) -> tuple[VPath, FileInfo | None] | None:
    """The first entry above ``path`` that is not a folder, with its info (``None`` for a
    link or a special file); ``None`` when there is none or it cannot be looked at."""
    for depth in range(1, len(path.parts)):
        above = VPath(path.parts[:depth])
        try:
            info = await store.stat(above)
        except UnsupportedFileError:
            return above, None  # a link or a special file: never a directory
        except OperationError:
            return None
        if not info.is_dir:
            return above, info
    return None


def shown_paths(
    paths: Iterable[VPath], full: Callable[[VPath], VPath], shown: Callable[[VPath], bool]
) -> dict[str, str]:
    """Store path -> workspace path (``full``) for ``paths`` (already admitted by the call)
    and the folders above them that the principal may see (``shown``): what a store's message
    may name and the error may tell. A folder the principal may not see is left out, so a
    message naming it is told in the plain form (``errors.translated``)."""
    told: dict[str, str] = {}
    for path in paths:
        told[str(path)] = str(full(path))
        above = path
        while not above.is_root:
            above = above.parent
            if str(above) not in told and shown(above):
                told[str(above)] = str(full(above))
    return told
