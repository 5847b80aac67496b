"""The view: the workspace as one principal sees it, copied into a private folder, and the diff
of that folder after the command.

The copy is made only through the workspace's own guarded ``list`` and ``read_bytes``, so a
file the principal may not read is not there (not even by name), and every read is audited as
that principal's. What was copied is remembered (version and digest per file) so the diff finds
exactly what the command created, changed or deleted.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from bastion.core.errors import AccessDeniedError, NotFoundError, OperationError
from bastion.core.models import FileInfo, Scope
from bastion.core.paths import VPath
from bastion.sandbox.bwrap import SYSTEM_NAMES
from bastion.sandbox.localbind import bindable
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.result import SandboxError

__all__ = ["Change", "Snapshot", "diff", "materialize", "written"]


@dataclass(frozen=True, slots=True)
class Copied:
    """One file as it was copied into the view."""

    version: str | None
    digest: bytes
    stamp: tuple[int, int, int] = (0, 0, 0)
    """Inode, size and change time of the host file once copied: a file whose stamp is the
    same was not touched (a command can set a file's mtime, never its ctime)."""


@dataclass
class Snapshot:
    """What the view held when the command started."""

    root: Path
    system: frozenset[str] = SYSTEM_NAMES
    """Top-level names the sandbox's system takes (never compared, never written back)."""
    files: dict[VPath, Copied] = field(default_factory=dict)
    dirs: set[VPath] = field(default_factory=set)
    read_only: list[str] = field(default_factory=list)
    """Mount prefixes bound read-only in the sandbox, parents first."""
    bound: dict[str, int] = field(default_factory=dict)
    """Read-only local mounts bound from their host folder (prefix to descriptor), not
    copied (``bastion.sandbox.localbind``); the caller closes the descriptors."""

    def close(self) -> None:
        for fd in self.bound.values():
            os.close(fd)
        self.bound.clear()


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between the view after the command and the snapshot."""

    path: VPath
    kind: str
    """``"write"`` (created or changed file), ``"mkdir"``, ``"delete"`` or ``"refuse"``."""
    data: bytes = b""
    base: Copied | None = None
    """The file as copied (``None``: the command created it)."""
    reason: str = ""
    shown: str = ""
    """The path as reported when it is not a valid workspace path (``path`` is then ``/``)."""

    @property
    def key(self) -> str:
        """The path as ``RunResult`` reports it."""
        return self.shown or str(self.path)


async def materialize(
    ws: SandboxWorkspace,
    root: Path,
    ids: tuple[int, int] | None,
    system: frozenset[str] = SYSTEM_NAMES,
) -> Snapshot:
    """Copy what ``ws``'s principal may read into ``root`` (created empty by the caller),
    owned by ``ids`` (the sandbox's uid and gid) when given. ``system`` names the top-level
    folders the sandbox's own system takes (``bastion.sandbox.bwrap``)."""
    snap = Snapshot(root, system)
    try:
        entries = await ws.list("/", recursive=True)
    except (NotFoundError, AccessDeniedError):  # nothing the principal may list
        entries = []
    for top in {e.path.parts[0] for e in entries}:
        if top in system:
            raise SandboxError(
                f"/{top} in the workspace collides with the sandbox's system folder /{top}; "
                "mount it elsewhere to run commands"
            )
    try:
        _bind_local(ws, entries, snap)
        for entry in entries:
            if _under_bound(entry.path, snap):
                continue
            target = _host(root, entry.path)
            if entry.is_dir:
                target.mkdir(mode=0o755)
                snap.dirs.add(entry.path)
            else:
                data = await _read(ws, entry)
                if data is None:
                    continue
                target.write_bytes(data)
                if ids is not None:
                    os.chown(target, *ids)
                snap.files[entry.path] = Copied(
                    entry.version, hashlib.sha256(data).digest(), _stamp(os.lstat(target))
                )
                continue
            if ids is not None:
                os.chown(target, *ids)
        # /tmp is a link bubblewrap makes to the sized /dev/shm (bastion.sandbox.bwrap)
        for name in ("usr", "proc", "dev", *(["etc"] if "etc" in system else [])):
            (root / name).mkdir(mode=0o755)
        for mount in ws.mounts:
            if str(mount.prefix) in snap.bound:
                continue
            if mount.scope is Scope.READ_ONLY and mount.prefix in snap.dirs | {VPath.ROOT}:
                snap.read_only.append(str(mount.prefix))
        snap.read_only.sort(key=len)
        if ids is not None:
            os.chown(root, *ids)
    except BaseException:
        snap.close()
        raise
    return snap


def _bind_local(ws: SandboxWorkspace, entries: list[FileInfo], snap: Snapshot) -> None:
    listed = {e.path for e in entries}
    for mount in ws.mounts:
        if mount.prefix.is_root or mount.prefix not in listed:
            continue
        n = len(mount.prefix.parts)
        visible = {
            VPath(e.path.parts[n:])
            for e in entries
            if len(e.path.parts) > n and e.path.parts[:n] == mount.prefix.parts
        }
        fd = bindable(mount, visible, ws.mounts)
        if fd is not None:
            snap.bound[str(mount.prefix)] = fd


def _under_bound(path: VPath, snap: Snapshot) -> bool:
    return any(
        len(path.parts) > len(p.parts) and path.parts[: len(p.parts)] == p.parts
        for p in map(VPath.parse, snap.bound)
    )


async def _read(ws: SandboxWorkspace, entry: FileInfo) -> bytes | None:
    """The file's bytes through the guard, a range at a time when it is over the read limit;
    ``None`` when the principal may not read it (it is then absent from the view)."""
    cap = ws.policy.limits.max_file_bytes
    try:
        if entry.size <= cap:
            return await ws.read_bytes(entry.path)
        parts = [
            await ws.read_bytes(entry.path, start=start, end=min(start + cap, entry.size))
            for start in range(0, entry.size, cap)
        ]
    except OperationError:
        return None
    return b"".join(parts)


def _host(root: Path, path: VPath) -> Path:
    return root.joinpath(*path.parts)


def _stamp(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_ino, info.st_size, info.st_ctime_ns)


_BLOCK = 4096


def written(snap: Snapshot) -> int:
    """Disk the command has taken in the view so far, in bytes: every regular file it created
    or touched (its stamp differs from the copy's) counts its size rounded up to 4 KiB
    blocks, every new folder, link or other entry one block, so many empty files count too.
    Cheap enough to poll: one ``lstat`` per entry, no reads."""
    total = 0
    # copies first: a background process's write-back may update the snapshot meanwhile
    files = {_host(snap.root, p): c.stamp for p, c in list(snap.files.items())}
    dirs = {_host(snap.root, p) for p in list(snap.dirs)}
    for path, info in _entries(snap):
        if stat.S_ISREG(info.st_mode):
            if files.get(path) != _stamp(info):
                total += max(_BLOCK, -(-info.st_size // _BLOCK) * _BLOCK)
        elif not (stat.S_ISDIR(info.st_mode) and path in dirs):
            total += _BLOCK
    return total


def _entries(snap: Snapshot) -> list[tuple[Path, os.stat_result]]:
    """Every entry of the view outside the system and bound folders, by host path (for the
    meter: no path parsing, unreadable corners skipped)."""
    bound = {snap.root.joinpath(*VPath.parse(p).parts) for p in snap.bound}
    found: list[tuple[Path, os.stat_result]] = []
    stack = [snap.root]
    while stack:
        folder = stack.pop()
        try:
            listing = list(os.scandir(folder))
        except OSError:
            continue
        for item in listing:
            if folder == snap.root and item.name in snap.system:
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((Path(item.path), info))
            if stat.S_ISDIR(info.st_mode) and Path(item.path) not in bound:
                stack.append(Path(item.path))
    return found


def diff(snap: Snapshot, *, read: bool = True) -> list[Change]:
    """What the command did to the view, in the order to apply it: directories made, files
    written, then deletions deepest first. Links, devices, FIFOs and sockets are refused, never
    followed. A file whose stamp is the one copied in is unchanged (not read); with
    ``read=False`` no file is read and written files carry no bytes (a list to refuse)."""
    made: list[Change] = []
    written: list[Change] = []
    present: set[VPath] = set()
    for path, mode in _walk(snap.root, snap.system):
        if isinstance(path, str):
            written.append(Change(VPath.ROOT, "refuse", reason=_BAD_NAME, shown=path))
            continue
        if _under_bound(path, snap):
            continue
        present.add(path)
        if stat.S_ISDIR(mode):
            if path not in snap.dirs:
                made.append(Change(path, "mkdir"))
        elif stat.S_ISREG(mode):
            host = _host(snap.root, path)
            base = snap.files.get(path)
            if base is not None and base.stamp == _stamp(os.lstat(host)):
                continue
            if not read:
                written.append(Change(path, "write", b"", base))
                continue
            data = host.read_bytes()
            if base is None or hashlib.sha256(data).digest() != base.digest:
                written.append(Change(path, "write", data, base))
        else:
            why = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            written.append(
                Change(path, "refuse", reason=f"{why}: only files and folders come back")
            )
    gone = [p for p in [*snap.files, *snap.dirs] if p not in present]
    gone.sort(key=lambda p: len(p.parts), reverse=True)
    deleted = [Change(p, "delete", base=snap.files.get(p)) for p in gone]
    return [*made, *written, *deleted]


_BAD_NAME = "not a valid workspace path (a control character, or too long); rename it"


def _walk(root: Path, system: frozenset[str]) -> list[tuple[VPath | str, int]]:
    """Every entry under ``root`` but the sandbox's system folders, parents first; links are
    reported, never followed. A name that is no valid workspace path comes as a string (shown
    safely), and nothing below it is looked at."""
    found: list[tuple[VPath | str, int]] = []
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    while stack:
        folder, parts = stack.pop()
        with os.scandir(folder) as listing:
            names = sorted(listing, key=lambda e: e.name)
        for item in names:
            if not parts and item.name in system:
                continue
            mode = item.stat(follow_symlinks=False).st_mode
            child = (*parts, item.name)
            try:
                path = VPath.parse("/" + "/".join(child))
            except OperationError:
                found.append((ascii("/" + "/".join(child))[1:-1], mode))
                continue
            found.append((path, mode))
            if stat.S_ISDIR(mode):
                stack.append((Path(item.path), child))
    return found
