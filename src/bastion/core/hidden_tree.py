"""What a principal is told about paths under and around entries it may not see.

Hidden entries are not there for the principal (docs/security.md, "existence oracles"): a
recursive delete or move takes what the principal sees and leaves the rest where it is, a
folder that holds nothing the principal may see is not shown, and a failure that could only
happen because something hidden is there (a path *below* a hidden file, a folder made over one)
is told as if it were not. :class:`HiddenTree` is the guard's part for all of it, over the
store the guard wraps and the guard's own decisions (:class:`~bastion.core.decisions.Decisions`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress

from bastion.core.decisions import Decisions
from bastion.core.errors import (
    AlreadyExistsError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    UnsupportedFileError,
    translated,
)
from bastion.core.models import Action, EntryKind, FileInfo
from bastion.core.operation import Operation, current_operation
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = [
    "HiddenTree",
    "delete_visible",
    "file_above",
    "move_visible",
    "shown_dir",
    "shown_paths",
    "unshown_folder",
]

Sees = Callable[[FileInfo], bool]
Entries = Callable[[VPath], Awaitable[list[FileInfo]]]
"""A folder's entries, their labels not worked out (``LabelPort.entries``; else ``list``)."""

_FILE, _DIR = EntryKind.FILE, EntryKind.DIRECTORY
_UNSHOWN = "a folder that holds nothing the principal may see"


async def visible_tree(
    store: Store, path: VPath, sees: Sees, entries: Entries
) -> tuple[list[VPath], list[VPath]]:
    """The folders and files under ``path`` that the principal sees (nothing below a hidden
    folder), folders parents first."""
    folders: list[VPath] = []
    files: list[VPath] = []
    hidden: set[tuple[str, ...]] = set()
    async for info in store.walk(path):
        parts = info.path.parts
        if any(parts[:depth] in hidden for depth in range(1, len(parts))):
            continue  # below a hidden folder
        if not sees(info) or (info.is_dir and not await shown_dir(store, info.path, sees, entries)):
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


async def delete_visible(store: Store, path: VPath, sees: Sees, entries: Entries) -> None:
    """Delete what the principal sees under ``path``; the rest stays where it is."""
    folders, files = await visible_tree(store, path, sees, entries)
    for file in files:
        await store.delete(file)
    await _prune(store, [path, *folders])


async def move_visible(store: Store, src: VPath, dst: VPath, sees: Sees, entries: Entries) -> None:
    """Move what the principal sees under ``src`` to ``dst``; the rest stays where it is."""
    folders, files = await visible_tree(store, src, sees, entries)
    await store.mkdir(dst)
    for folder in folders:
        with suppress(AlreadyExistsError):
            await store.mkdir(dst.join(folder.relative_to(src)))
    for file in files:
        await store.rename(file, dst.join(file.relative_to(src)))
    await _prune(store, [src, *folders])


async def shown_dir(store: Store, path: VPath, sees: Sees, entries: Entries) -> bool:
    """Folder names are content too: a folder is there for the principal when it is empty or
    holds something the principal may see (stops at the first such entry)."""
    try:
        found = await entries(path)  # labels only for the entries looked at
    except OperationError:
        return True  # the call that follows says what is wrong
    if not found:
        return True
    # files first (one stat each, usually one is enough), then folders, depth first
    for entry in sorted(found, key=lambda e: e.is_dir):
        try:
            info = await store.stat(entry.path)
        except OperationError:
            continue  # gone meanwhile, or cannot be served: not something to show
        if not sees(info):
            continue
        if not info.is_dir or await shown_dir(store, info.path, sees, entries):
            return True
    return False


async def unshown_folder(
    store: Store, path: VPath, sees: Sees, entries: Entries, info: FileInfo | None = None
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
    return info.is_dir and not await shown_dir(store, path, sees, entries)


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


class HiddenTree:
    """What the principal of ``decide`` is told about paths under and around entries it may
    not see, on ``store`` (the store the guard wraps; ``entries``: its cheap listing)."""

    def __init__(self, store: Store, entries: Entries, decide: Decisions) -> None:
        self.store = store
        self.entries = entries
        self.decide = decide

    async def shown(self, path: VPath) -> bool:
        """Whether the folder at ``path`` is there for the principal (:func:`shown_dir`)."""
        return await shown_dir(self.store, path, self.decide.sees, self.entries)

    async def unshown(self, path: VPath, info: FileInfo | None = None) -> str | None:
        """Why the folder at ``path`` is not there: it holds only hidden entries; else None."""
        hidden = await unshown_folder(self.store, path, self.decide.sees, self.entries, info)
        return _UNSHOWN if hidden else None

    async def hidden_above(self, path: VPath) -> str | None:
        """Why the first non-directory above ``path`` is hidden, if there is one and it is."""
        found = await file_above(self.store, path)
        return None if found is None else self.decide.why_hidden(found[0], _FILE, found[1])

    async def delete_visible(self, path: VPath) -> None:
        await delete_visible(self.store, path, self.decide.sees, self.entries)

    async def move_visible(self, src: VPath, dst: VPath) -> None:
        await move_visible(self.store, src, dst, self.decide.sees, self.entries)

    async def check_tree(self, path: VPath, verb: str) -> bool:
        """Refuse when an entry under ``path`` that the principal sees may not be deleted;
        ``True`` when hidden entries are under it. Those are not there for the principal: they
        are neither told nor touched (the folder stays, holding only them: it is not shown)."""
        decide = self.decide
        hidden_inside = False
        async for info in self.store.walk(path):
            if decide.why_hidden(info.path, info.kind, info) is not None:
                hidden_inside = True
                continue
            if decide.ctx.allows(Action.DELETE, decide.full(info.path)):
                continue
            if info.is_dir and await self.unshown(info.path, info):
                hidden_inside = True  # a folder of hidden entries only: not there either
                continue
            current_operation().refuse(f"protected descendant {decide.full(info.path)}")
            raise PolicyDeniedError(
                f"cannot {verb} {decide.full(path)}: it contains entries you may not {verb}"
            )
        return hidden_inside

    async def failed(
        self,
        exc: OperationError,
        path: VPath,
        op: Operation,
        *,
        writing: bool = False,
        also: tuple[VPath, ...] = (),
    ) -> OperationError:
        """The error to raise for a store failure on ``path`` (re-raise it ``from None``: the
        store's own message names store paths). ``also``: the other paths of the call (a
        move's source), which the message may name too."""
        decide = self.decide
        if isinstance(exc, NotADirectoryError_ | IsADirectoryError_ | UnsupportedFileError):
            # "is a file", "is a directory", "is a link" say something is there: if that
            # something is hidden, the answer is the plain not found.
            why = decide.why_hidden(path, _FILE, None) or decide.why_hidden(path, _DIR, None)
            if why is None:
                why = await self.hidden_above(path)
            if why is None and isinstance(exc, IsADirectoryError_):
                why = await self.unshown(path)
            if why is not None:
                return decide.hide(path, why, op)
        full, prefix = decide.full(path), str(decide.mount.prefix)
        if isinstance(exc, NotFoundError):  # the store's own words may name a hidden parent
            gone = full.parent if writing else full
            shape = "parent directory {} does not exist" if writing else "{} not found"
            return NotFoundError(shape.format(gone), path=gone, mount=prefix)
        shown = shown_paths(
            (path, *also), decide.full, lambda p: not decide.why_hidden(p, _DIR, None)
        )
        return translated(exc, path, full, also=shown, mount=prefix)

    async def refuse_onto_hidden(self, exc: OperationError, path: VPath, op: Operation) -> None:
        """A change that failed because a file the principal may not see is at ``path`` (a
        folder made over it) or above it (a write below it) is refused in the words of a
        policy refusal, as a write onto a hidden name is (``Decisions.taken``): "not found" or
        "already exists" would tell that something is there."""
        why = None
        if isinstance(exc, NotADirectoryError_):
            why = await self.hidden_above(path)
        elif isinstance(exc, IsADirectoryError_):  # a file written over a folder not shown
            why = await self.unshown(path)
        elif isinstance(exc, AlreadyExistsError):
            with suppress(OperationError):
                there = await self.store.stat(path)
                if not there.is_dir:
                    why = self.decide.why_hidden(path, there.kind, there)
        if why is not None:
            raise self.decide.taken(path, Action.WRITE, why, op)
