"""What a principal sees under a folder, worked out once per call: the tree ``grep`` and
``glob`` walk.

A walk through :meth:`Router.children` lists each folder through the guard, which lists it
again to tell whether each subfolder holds anything the principal may see (a folder of hidden
entries only is not shown), and stats it once more before listing it. Here each folder inside
one mount is listed once, from the store below the guard (its labels come from the labels
cache, :mod:`bastion.labels.store`), every entry is decided by the guard's own decision
(:meth:`GuardedStore.visible`), and which folders are shown is worked out bottom-up from the
same listings. The answer is what the walk through the guard gives, entry for entry and in
the same order; folders with mounts below them are still walked through the router. Reading a
file found here goes through the guard as ever, so the bytes a grep reads are checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bastion.core.errors import (
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    ScopeError,
    UnsupportedFileError,
)
from bastion.core.guard import GuardedStore
from bastion.core.models import Action, EntryKind, FileInfo
from bastion.core.paths import VPath
from bastion.workspace.routing import Router

__all__ = ["VisibleTree", "visible_tree"]

_Parts = tuple[str, ...]
_SKIPPED = (ScopeError, NotFoundError, NotADirectoryError_, UnsupportedFileError)
"""What makes a walk through the guard skip a folder (anything else is raised); a folder
swapped for a link since its parent was listed is not there for the walk (the guard tells it
as not found), as a listing leaves links out."""


class VisibleTree:
    """The folders reached under a root, each with the children the principal sees (what
    :meth:`Router.children` returns: name order, folders of hidden entries left out)."""

    def __init__(self, children: dict[_Parts, list[FileInfo]]) -> None:
        self.children = children

    def walk(self, root: VPath) -> Iterator[FileInfo]:
        """Entries under ``root`` in the order of :meth:`Router.walk` (no depth limit)."""
        stack = [root]
        while stack:
            kids = self.children.get(stack.pop().parts, [])
            stack.extend(child.path for child in reversed(kids) if child.is_dir)
            yield from kids

    def pruned(self, root: VPath, below: Callable[[VPath], bool]) -> Iterator[FileInfo]:
        """Entries under ``root`` in the order of ``TreeOps.glob``'s walk, which goes into a
        folder only when ``below`` says a match may lie under it."""
        stack = [root]
        while stack:
            for child in self.children.get(stack.pop().parts, []):
                yield child
                if child.is_dir and below(child.path):
                    stack.append(child.path)

    def files(self, root: VPath) -> list[FileInfo]:
        """The files under ``root``, in :meth:`walk` order."""
        return [entry for entry in self.walk(root) if entry.is_file]


async def visible_tree(router: Router, root: VPath) -> VisibleTree:
    """The tree under ``root`` (a folder the caller has already stat-ed through the guard)."""
    children: dict[_Parts, list[FileInfo]] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        if router.mounts.is_virtual_dir(folder):  # mounts below: the router merges them
            try:
                kids = await router.children(folder)
            except _SKIPPED:
                continue
            children[folder.parts] = kids
            stack.extend(kid.path for kid in kids if kid.is_dir)
            continue
        mount = router.mounts.find(folder)
        if mount is None:
            continue
        guarded = router.guarded[mount.prefix]
        start = mount.to_store_path(folder)
        if guarded.hidden or not mount.scope.allows(Action.LIST):
            continue  # the guard's listing refuses: the walk skips it
        if start.is_root and not guarded.visible(FileInfo(start, EntryKind.DIRECTORY)):
            continue
        children.update(await _store_subtree(guarded, start, folder))
    return VisibleTree(children)


async def _store_subtree(
    guarded: GuardedStore, start: VPath, at: VPath
) -> dict[_Parts, list[FileInfo]]:
    """The shown children of every folder under ``start`` in one mount, by workspace path
    (``start`` is at ``at``): each folder listed once."""
    inner = guarded.inner
    seen: dict[_Parts, tuple[bool, list[FileInfo]]] = {}
    order: list[_Parts] = []
    stack = [start]
    while stack:
        folder = stack.pop()
        try:
            entries = await inner.list(folder)
        except _SKIPPED:
            continue
        except OperationError:
            await guarded.list(folder)  # the guard words the failure (or lists it after all)
            raise
        visible = sorted((e for e in entries if guarded.visible(e)), key=lambda e: e.path.parts)
        seen[folder.parts] = (not entries, visible)
        order.append(folder.parts)
        stack.extend(e.path for e in visible if e.is_dir)
    shown: dict[_Parts, bool] = {}
    for parts in reversed(order):  # children before parents
        empty, visible = seen[parts]
        shown[parts] = empty or any(not e.is_dir or shown.get(e.path.parts, True) for e in visible)
    depth = len(start.parts)
    out: dict[_Parts, list[FileInfo]] = {}
    for parts, (_, visible) in seen.items():
        out[at.parts + parts[depth:]] = [
            _shown_as(e, VPath(at.parts + e.path.parts[depth:]))
            for e in visible
            if not e.is_dir or shown.get(e.path.parts, True)
        ]
    return out


def _shown_as(info: FileInfo, path: VPath) -> FileInfo:
    """``info`` at its workspace path, as the guard shows it (a folder without its time)."""
    if info.is_dir and info.mtime:
        return FileInfo(path, info.kind, 0, 0.0, None, info.labels)
    return info.at(path)
