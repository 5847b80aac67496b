"""The local store's folder listings (``bastion.stores.local``): one pass over a folder gives
its entries and its odd names, and a call holding listings (``core.listings``) has the folders
it expects next listed in the same trip to a worker thread. For a glob (``Store.list_sought``)
a pass looks up only the folders and the files whose names the glob may want: the others are
told by their directory entries alone, and only the folders the glob may go into are listed
ahead.

A private module of ``bastion.stores``. Every function here runs in a worker thread and opens
folders only through the store's own ``open_dir`` (the descriptor walk from the root that
follows no link, ``LocalStore._open_dir``).
"""

from __future__ import annotations

import os
import re
import stat
import time
import unicodedata
from collections import deque
from collections.abc import Callable

from bastion.core.errors import OperationError
from bastion.core.listings import Listing, Sought
from bastion.core.models import FileInfo
from bastion.core.offload import checkpoint
from bastion.core.paths import VPath
from bastion.stores._fd import TEMP_PREFIX, child_path, info_of, translate_error

__all__ = ["listed", "odd_in", "scan", "scan_ahead", "scan_for"]

OpenDir = Callable[[VPath], int]

AHEAD_FOLDERS = 1024
AHEAD_ENTRIES = 20_000
AHEAD_SECONDS = 0.02
"""How much one trip to a worker thread lists beyond the folder asked for (:func:`scan_ahead`):
a tree of a few thousand files in one trip, and little enough that folders the call will not
use (those the principal may not see) cost it a bounded, small amount of work."""


def scan(open_dir: OpenDir, path: VPath) -> Listing:
    """One pass over the folder ``path``: its entries (regular files and folders whose names
    address them, ``Store.list``) and its odd names (links, special files and names not in
    NFC, ``Store.odd_names``), from one ``lstat`` each. Temporary files are neither."""
    return scan_for(open_dir, path, None)


def scan_for(open_dir: OpenDir, path: VPath, keeps: Callable[[str], object] | None) -> Listing:
    """:func:`scan`; with ``keeps`` (``Sought.keeps``), a file whose raw name it refuses is
    told by its directory entry alone (its type, as ``readdir`` gives it) and left out, never
    looked up: its name still counts among the odd names where it is one."""
    fd = open_dir(path)
    entries: list[FileInfo] = []
    odd: set[str] = set()
    normalize = unicodedata.normalize
    try:
        with os.scandir(fd) as it:  # scandir works on a duplicate and leaves fd open
            for entry in it:
                name = entry.name
                if keeps is not None and not keeps(name):
                    if entry.is_file(follow_symlinks=False):  # by its type in the folder
                        if name.isascii() or normalize("NFC", name) == name:
                            continue  # an ordinary file not wanted: the common case
                        told = True  # a name not in NFC: odd
                    else:  # a folder is looked up as ever, a link or special file is odd
                        told = not entry.is_dir(follow_symlinks=False)
                    if told:
                        if not name.startswith(TEMP_PREFIX):
                            odd.add(name if name.isascii() else normalize("NFC", name))
                        continue
                if name.startswith(TEMP_PREFIX):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listing
                plain = stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)
                nfc = name if name.isascii() else normalize("NFC", name)
                if nfc != name or not plain:
                    odd.add(nfc)
                if plain and (child := child_path(path, name)) is not None:
                    entries.append(info_of(child, st))
    except OSError as exc:
        raise translate_error(exc, path) from exc
    finally:
        os.close(fd)
    return entries, frozenset(odd)


def listed(open_dir: OpenDir, path: VPath) -> list[FileInfo]:
    """The entries of the folder ``path`` (``Store.list``)."""
    return scan(open_dir, path)[0]


def odd_in(open_dir: OpenDir, path: VPath) -> frozenset[str]:
    """The odd names of the folder ``path`` (``Store.odd_names``), no file looked up."""
    return scan_for(open_dir, path, _NOTHING)[1]


_NOTHING = re.compile("(?!)").fullmatch
"""A test no name passes."""


def scan_ahead(
    open_dir: OpenDir,
    path: VPath,
    ahead: int | None,
    more: list[VPath],
    sought: Sought | None = None,
) -> dict[tuple[str, ...], Listing]:
    """``path`` scanned (its failure raised), then, breadth first and within the bounds above,
    the folders ``more`` and those up to ``ahead`` levels below each (``None``: any depth). A
    folder that cannot be listed is left out: asked for later, its own listing says why.
    With ``sought``, each folder is scanned for it (:func:`scan` with its ``keeps``) and the
    folders below are listed ahead only where it goes (``Sought.into``)."""
    keeps = None if sought is None else sought.keeps
    into = None if sought is None else sought.into
    first = scan_for(open_dir, path, keeps)
    out = {path.parts: first}
    queue: deque[tuple[VPath, int]] = deque((folder, 0) for folder in more)
    if ahead is None or ahead > 0:
        queue.extend((e.path, 1) for e in first[0] if e.is_dir and (into is None or into(e.path)))
    entries = len(first[0])
    deadline = time.monotonic() + AHEAD_SECONDS
    while queue and len(out) < AHEAD_FOLDERS and entries < AHEAD_ENTRIES:
        folder, level = queue.popleft()
        if folder.parts in out:
            continue
        if time.monotonic() > deadline:
            break
        checkpoint()  # the caller stopped waiting: stop here
        try:
            listing = scan_for(open_dir, folder, keeps)
        except OperationError:
            continue
        out[folder.parts] = listing
        entries += len(listing[0])
        if ahead is None or level < ahead:
            queue.extend(
                (e.path, level + 1)
                for e in listing[0]
                if e.is_dir and (into is None or into(e.path))
            )
    return out
