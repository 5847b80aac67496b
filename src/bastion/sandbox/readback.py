"""Reading the view back after the command: what it created, changed and deleted
(:func:`diff`), and how much disk it has taken so far (:func:`written`).

Only what the command wrote can come back, by construction (``bastion.sandbox.tree``): the walk
opens each listed name below a checked descriptor, follows no link, opens no special file, and
reads a file only through the descriptor it checked. Names are judged one by one, as the kernel
listed them: a name that is no workspace name (not UTF-8, not in NFC, a control character, too
long) is refused and reported, never normalized into another name, never raised; nothing below
it is looked at. Both functions block (they walk a tree): callers run them in a worker thread.

The command must be over when :func:`diff` reads (it waits a little for processes still dying
with the view as their root, and brings nothing back if one stays); a background process's
write-back while it runs passes ``live=True`` and gets what each file held when it was read.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field

from bastion.core.errors import OperationError
from bastion.core.paths import MAX_PATH_BYTES, VPath
from bastion.sandbox.result import SandboxError
from bastion.sandbox.snapshot import Change, Snapshot, stamp
from bastion.sandbox.tree import Item, Walk, holders, open_root, read_regular

__all__ = ["MAX_DEPTH", "diff", "written"]

MAX_DEPTH = 256
"""Deepest a new entry may lie (names from the workspace's root): deeper ones are refused, one
by one, with what lies below them."""

_BLOCK = 4096
_UNSEEN = 1 << 60
"""What :func:`written` counts for a folder it cannot look into: over any limit."""
_SETTLE_SECONDS = 5.0

_BAD_NAME = "not a valid workspace path (a control character, or too long); rename it"
_NOT_UTF8 = "not a valid workspace path (its name is not UTF-8); rename it"
_NOT_NFC = (
    "not a valid workspace path (its name is not in Unicode NFC form, another spelling of a "
    "name); rename it"
)
_TOO_DEEP = (
    f"more than {MAX_DEPTH} folders deep: not written back, nor anything in it; "
    "keep the tree shallower"
)
_UNREAD = "could not be read back (unreadable, or changed while read); nothing in it came back"
_FILE_UNREAD = "could not be read back (unreadable, or changed while read); run again"
_OVER = (
    "not written back: the command wrote more than its written-bytes limit; write less, or ask "
    "an operator for a larger limit"
)
_RUNNING = "not written back: processes of the command were still running; run it again"


def written(snap: Snapshot) -> int:
    """Disk the command has taken in the view so far, in bytes: every regular file it created
    or touched (its stamp differs from the copy's) counts its size rounded up to 4 KiB
    blocks, every new folder, link or other entry one block, so many empty files count too; a
    folder it cannot look into counts as over any limit. Cheap enough to poll: one ``lstat``
    per entry, no reads."""
    # copies first: a background process's write-back may update the snapshot meanwhile
    files = {p.parts: c.stamp for p, c in list(snap.files.items())}
    dirs = {p.parts for p in list(snap.dirs)}
    bound = {VPath.parse(p).parts for p in snap.bound}
    total = 0

    def enter(item: Item[tuple[str, ...]]) -> tuple[str, ...] | None:
        parts = (*item.parent, item.name)
        return None if parts in bound else parts

    fd = open_root(snap.root, snap.root_id)
    try:
        walk: Walk[tuple[str, ...]] = Walk(fd, (), enter)
        for item in walk:
            if item.depth == 1 and item.name in snap.system:
                continue
            parts = (*item.parent, item.name)
            mode = item.info.st_mode
            if stat.S_ISREG(mode):
                if files.get(parts) != stamp(item.info):
                    total += max(_BLOCK, -(-item.info.st_size // _BLOCK) * _BLOCK)
            elif not (stat.S_ISDIR(mode) and parts in dirs):
                total += _BLOCK
        total += _UNSEEN * len(walk.unread)
    finally:
        os.close(fd)
    return total


@dataclass
class _Reader:
    """One read-back of the view: the walk's judgement of each entry."""

    snap: Snapshot
    read: bool
    budget: int
    limit: int
    made: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    present: set[VPath] = field(default_factory=set)
    seen: int = 0
    over: bool = False
    entered: VPath | None = None
    """The folder the walk goes into next (set while its entry is judged)."""

    def enter(self, item: Item[VPath]) -> VPath | None:
        return self.entered

    def run(self, fd: int) -> list[Change]:
        walk = Walk(fd, VPath.ROOT, self.enter)
        for item in walk:
            self.entered = None
            if item.depth == 1 and item.name in self.snap.system:
                continue
            self.seen += 1
            if self.seen > self.limit:  # more entries than the written limit can hold
                self.over, self.read = True, False
            self.judge(item)  # the entry that went over is named among the refused
            if self.over:
                break
        unread = [] if self.over else [*walk.unread, *walk.changed]
        for folder in unread:
            self.changed.append(Change(folder, "refuse", reason=_UNREAD))
        if self.over:
            return [_refused(c, _OVER) for c in [*self.made, *self.changed]]
        gone = [
            p
            for p in [*self.snap.files, *self.snap.dirs]
            if p not in self.present and not any(p.is_relative_to(u) for u in unread)
        ]
        gone.sort(key=lambda p: len(p.parts), reverse=True)
        deleted = [Change(p, "delete", base=self.snap.files.get(p)) for p in gone]
        return [*self.made, *self.changed, *deleted]

    def judge(self, item: Item[VPath]) -> None:
        path = _child(item.parent, item.name)
        if isinstance(path, str):
            shown = _shown(item.parent, item.name)
            self.changed.append(Change(VPath.ROOT, "refuse", reason=path, shown=shown))
            return
        self.present.add(path)
        mode = item.info.st_mode
        copied = path in self.snap.dirs or path in self.snap.files
        if not copied and len(path.parts) > MAX_DEPTH:
            self.changed.append(Change(path, "refuse", reason=_TOO_DEEP))
        elif stat.S_ISDIR(mode):
            if str(path) not in self.snap.bound:  # a bound folder's host side is empty
                self.entered = path
            if path not in self.snap.dirs:
                self.made.append(Change(path, "mkdir"))
        elif stat.S_ISREG(mode):
            self.file(item, path)
        else:
            why = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            reason = f"{why}: only files and folders come back"
            self.changed.append(Change(path, "refuse", reason=reason))

    def file(self, item: Item[VPath], path: VPath) -> None:
        base = self.snap.files.get(path)
        if base is not None and base.stamp == stamp(item.info):
            return  # untouched: not read again
        if not self.read:
            self.changed.append(Change(path, "write", b"", base))
            return
        try:
            got = read_regular(item, self.budget)
        except OSError:
            got = None
        if got is None:
            self.changed.append(Change(path, "refuse", reason=_FILE_UNREAD))
            return
        data = got[1]
        if len(data) > self.budget:
            self.over = True
            self.changed.append(Change(path, "write", b"", base))
            return
        self.budget -= len(data)
        if base is None or hashlib.sha256(data).digest() != base.digest:
            self.changed.append(Change(path, "write", data, base))


def diff(snap: Snapshot, *, read: bool = True, live: bool = False) -> list[Change]:
    """What the command did to the view, in the order to apply it: directories made, files
    written (or refused), then deletions deepest first. Links, devices, FIFOs and sockets are
    refused, never followed or opened. A file whose stamp is the one copied in is unchanged
    (not read); with ``read=False`` no file is read and written files carry no bytes (a list
    to refuse). More than ``snap.read_cap`` bytes, or more entries than that limit can hold:
    every change is refused (the written-bytes limit). ``live``: the command may still run."""
    reason = None if live or _settled(snap) else _RUNNING
    copied = len(snap.files) + len(snap.dirs)
    reader = _Reader(snap, read and reason is None, snap.read_cap, copied + snap.read_cap // _BLOCK)
    try:
        fd = open_root(snap.root, snap.root_id)
    except OSError:
        raise SandboxError("the command's view could not be read back; nothing came back") from None
    try:
        changes = reader.run(fd)
    except OSError:
        raise SandboxError("the command's view could not be read back; nothing came back") from None
    finally:
        os.close(fd)
    return changes if reason is None else [_refused(c, reason) for c in changes]


def _settled(snap: Snapshot) -> bool:
    """True once no process has the view as its root (those of a command killed a moment ago
    may still be dying): waits a few seconds at most."""
    deadline = time.monotonic() + _SETTLE_SECONDS
    while holders(snap.root_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _refused(change: Change, reason: str) -> Change:
    if change.kind == "refuse":
        return change
    return Change(change.path, "refuse", reason=reason, shown=change.shown)


def _child(parent: VPath, name: str) -> VPath | str:
    """The workspace path of the entry ``name`` listed in ``parent``, or why there is none.
    Only a name that is its own normal form is one: two spellings never meet in one path."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return _NOT_UTF8
    try:
        path = parent.child(name)
    except OperationError:
        return _BAD_NAME
    if path.name != name:
        return _NOT_NFC
    if len(str(path).encode("utf-8")) > MAX_PATH_BYTES:
        return _BAD_NAME
    return path


def _shown(parent: VPath, name: str) -> str:
    """``parent/name`` for a report, the name escaped: bytes that are no UTF-8 as ``\\xNN``,
    anything but printable ASCII as Python writes it (``\\x01``, ``\\u0301``, ``\\\\``)."""
    text = "".join(
        f"\\x{ord(ch) - 0xDC00:02x}"
        if 0xDC80 <= ord(ch) <= 0xDCFF
        else ch
        if ch.isascii() and ch.isprintable() and ch != "\\"
        else ascii(ch)[1:-1]
        for ch in name
    )
    return f"{str(parent).rstrip('/')}/{text}"
