"""The view: the workspace as one principal sees it, copied into a private folder.

The copy is made only through the workspace's own guarded ``list`` and ``read_bytes``, so a
file the principal may not read is not there (not even by name), and every read is audited as
that principal's. What was copied is remembered (version and digest per file) so the read-back
(``bastion.sandbox.readback``) finds exactly what the command created, changed or deleted.

The copy is written by this process, relative to a descriptor of the view's root, owned by the
sandbox's user: whatever the mode bits of the files behind a mount, the command can read its
view. The disk work runs in worker threads, a batch at a time, never on the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from bastion.core.errors import AccessDeniedError, NotFoundError, OperationError
from bastion.core.models import FileInfo, Scope
from bastion.core.paths import VPath
from bastion.sandbox.bwrap import SYSTEM_NAMES
from bastion.sandbox.localbind import bindable
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.readback import diff, written
from bastion.sandbox.result import SandboxError
from bastion.sandbox.snapshot import Change, Copied, Snapshot, stamp
from bastion.sandbox.tree import ident

__all__ = ["Change", "Copied", "Snapshot", "diff", "materialize", "written"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_BATCH_FILES = 256
_BATCH_BYTES = 8 * 1024 * 1024


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
    fd = os.open(root, _DIR_FLAGS)
    try:
        snap.root_id = ident(os.fstat(fd))
        await asyncio.to_thread(_bind_local, ws, entries, snap)  # walks local folders
        batch = _Batch(fd, ids, snap)
        for entry in entries:
            if _under_bound(entry.path, snap):
                continue
            if entry.is_dir:
                batch.dirs.append(entry.path)
            else:
                data = await _read(ws, entry)
                if data is not None:
                    batch.files.append((entry, data))
                    batch.size += len(data)
            if len(batch.files) >= _BATCH_FILES or batch.size >= _BATCH_BYTES:
                await asyncio.to_thread(batch.flush)
        batch.dirs += [VPath((name,)) for name in _system_folders(system)]
        await asyncio.to_thread(batch.flush)
        for mount in ws.mounts:
            if str(mount.prefix) in snap.bound:
                continue
            if mount.scope is Scope.READ_ONLY and mount.prefix in snap.dirs | {VPath.ROOT}:
                snap.read_only.append(str(mount.prefix))
        snap.read_only.sort(key=len)
        if ids is not None:
            os.fchown(fd, *ids)
    except BaseException:
        snap.close()
        raise
    finally:
        os.close(fd)
    return snap


def _system_folders(system: frozenset[str]) -> list[str]:
    """The mount points of the sandbox's own folders that are not links (made empty); ``/tmp``
    is a link bubblewrap makes to the sized ``/dev/shm`` (``bastion.sandbox.bwrap``)."""
    return ["usr", "proc", "dev", *(["etc"] if "etc" in system else [])]


@dataclass
class _Batch:
    """Folders and files to make in the view, in order, in one worker thread's go."""

    root_fd: int
    ids: tuple[int, int] | None
    snap: Snapshot
    dirs: list[VPath] = field(default_factory=list)
    files: list[tuple[FileInfo, bytes]] = field(default_factory=list)
    size: int = 0

    def flush(self) -> None:
        for path in self.dirs:  # parents come before their entries in the listing
            rel = "/".join(path.parts)
            os.mkdir(rel, 0o755, dir_fd=self.root_fd)
            if self.ids is not None:
                os.chown(rel, *self.ids, dir_fd=self.root_fd, follow_symlinks=False)
            if len(path.parts) > 1 or path.parts[0] not in self.snap.system:
                self.snap.dirs.add(path)
        for entry, data in self.files:
            out = os.open("/".join(entry.path.parts), _NEW_FILE, 0o644, dir_fd=self.root_fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                if self.ids is not None:
                    os.fchown(out, *self.ids)
                info = os.fstat(out)
            finally:
                os.close(out)
            digest = hashlib.sha256(data).digest()
            self.snap.files[entry.path] = Copied(entry.version, digest, stamp(info))
        self.dirs.clear()
        self.files.clear()
        self.size = 0


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
