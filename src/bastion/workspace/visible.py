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

import re
from collections.abc import Callable, Iterator

from bastion.core.errors import (
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    ScopeError,
    UnsupportedFileError,
)
from bastion.core.guard import GuardedStore
from bastion.core.listings import Sought, held_listings
from bastion.core.models import Action, EntryKind, FileInfo
from bastion.core.paths import VPath
from bastion.labels.store import DocumentLabels
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


async def visible_tree(
    router: Router,
    root: VPath,
    *,
    wanted: Callable[[VPath], bool] | None = None,
    below: Callable[[VPath], bool] | None = None,
    named: re.Pattern[str] | None = None,
) -> VisibleTree:
    """The tree under ``root`` (a folder the caller has already stat-ed through the guard).

    ``wanted`` and ``below`` (a glob's :meth:`~bastion.core.globs.Glob.matches` and
    :meth:`~bastion.core.globs.Glob.could_match_below`): the tree then holds, of each folder's
    entries, only those ``wanted`` that the principal sees, and the folders it sees that
    ``below`` lets the walk go into, so that :meth:`VisibleTree.pruned` with the same ``below``
    gives the entries of the full tree that are ``wanted``, in the same order. Only a wanted
    folder is asked whether it is shown (holds something the principal may see): below a
    folder not shown nothing is seen, so going into it finds nothing to give. ``named``: a
    pattern that the name of every entry ``wanted`` matches whole (a glob's last segment),
    tried first, and told to the store, which may then leave out the files it refuses
    without looking them up (``Store.list_sought``)."""
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
            stack.extend(k.path for k in kids if k.is_dir and (below is None or below(k.path)))
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
        if wanted is None:
            children.update(await _store_subtree(guarded, start, folder))
        else:
            found = await _wanted_subtree(guarded, start, folder, wanted, below, named)
            children.update(found)
    return VisibleTree(children)


async def _store_subtree(
    guarded: GuardedStore, start: VPath, at: VPath
) -> dict[_Parts, list[FileInfo]]:
    """The shown children of every folder under ``start`` in one mount, by workspace path
    (``start`` is at ``at``): each folder listed once."""
    seen: dict[_Parts, tuple[bool, list[FileInfo]]] = {}
    order: list[_Parts] = []
    level = [start]
    with held_listings() as holding:
        while level:  # breadth first: a level's folders are listed in one trip
            holding.expect([folder.parts for folder in level])
            below: list[VPath] = []
            for folder in level:
                entries = await _listed(guarded, folder)
                if entries is None:
                    continue
                visible = sorted(
                    (e for e in entries if guarded.visible(e)), key=lambda e: e.path.parts
                )
                seen[folder.parts] = (not entries, visible)
                order.append(folder.parts)
                below.extend(e.path for e in visible if e.is_dir)
            level = below
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


async def _wanted_subtree(
    guarded: GuardedStore,
    start: VPath,
    at: VPath,
    wanted: Callable[[VPath], bool],
    into: Callable[[VPath], bool] | None,
    named: re.Pattern[str] | None,
) -> dict[_Parts, list[FileInfo]]:
    """:func:`_store_subtree` for :func:`visible_tree` with ``wanted``: each folder's wanted
    entries that the principal sees (a folder: and that is shown) and the folders it sees
    that the walk goes into (``into``), by workspace path, in name order."""
    depth = len(start.parts)
    prefix = at.parts

    def candidate(entry: FileInfo) -> bool:  # folders are all looked at; files if wanted
        if not entry.is_file:
            return True
        if named is not None and not named.fullmatch(entry.path.name):
            return False
        return wanted(VPath(prefix + entry.path.parts[depth:]))

    def goes_into(folder: VPath) -> bool:  # a store path
        return into is None or into(VPath(prefix + folder.parts[depth:]))

    # the store may leave out the files whose names cannot match, unseen (``Store.list_sought``)
    sought = Sought((_ANY_NAME if named is None else named,), goes_into)
    out: dict[_Parts, list[FileInfo]] = {}
    level = [start]
    with held_listings() as holding:
        while level:  # breadth first: a level's folders are listed in one trip
            expected = [folder.parts for folder in level]
            holding.expect(expected)
            deeper: list[VPath] = []
            for folder in level:
                entries = await _listed(guarded, folder, candidate, sought)
                if entries is None:
                    continue
                kept: list[FileInfo] = []
                asked: list[tuple[FileInfo, VPath, bool]] = []  # folders wanted: shown?
                for e in entries:  # the files given are wanted (``candidate``)
                    full = VPath(prefix + e.path.parts[depth:])
                    if e.is_dir:
                        go = into is None or into(full)
                        sought_too = wanted(full)
                        if not (go or sought_too) or not guarded.visible(e):
                            continue
                        if sought_too:
                            asked.append((e, full, go))
                            continue
                        deeper.append(e.path)
                    elif not e.is_file or not guarded.visible(e):
                        continue
                    kept.append(_shown_as(e, full))
                if asked:  # their listings in one trip, then the walk's level again
                    holding.expect([e.path.parts for e, _, _ in asked])
                    for e, full, go in asked:
                        if await guarded.lookup(e.path) is None:
                            continue  # a folder of hidden entries only: not shown, and
                            # nothing below it is seen
                        if go:
                            deeper.append(e.path)
                        kept.append(_shown_as(e, full))
                    holding.expect(expected)
                kept.sort(key=lambda e: e.path.parts)
                out[at.parts + folder.parts[depth:]] = kept
            level = deeper
    return out


async def _listed(
    guarded: GuardedStore,
    folder: VPath,
    only: Callable[[FileInfo], bool] | None = None,
    sought: Sought | None = None,
) -> list[FileInfo] | None:
    """The store's entries of ``folder``, labelled; ``None`` where the walk skips it. With
    ``only``, the entries it keeps (only they are labelled); with ``sought``, from the
    store's listing for it (``Store.list_sought``)."""
    inner = guarded.inner
    try:
        if only is not None and isinstance(inner, DocumentLabels):
            return await inner.list(folder, only=only, sought=sought)
        if sought is not None:
            found = await inner.list_sought(folder, sought)
        else:
            found = await inner.list(folder)
        return found if only is None else [e for e in found if only(e)]
    except _SKIPPED:
        return None
    except OperationError:
        await guarded.list(folder)  # the guard words the failure (or lists it after all)
        raise


_ANY_NAME = re.compile("(?s:.*)")


def _shown_as(info: FileInfo, path: VPath) -> FileInfo:
    """``info`` at its workspace path, as the guard shows it (a folder without its time)."""
    if info.is_dir and info.mtime:
        return FileInfo(path, info.kind, 0, 0.0, None, info.labels)
    return info.at(path)
