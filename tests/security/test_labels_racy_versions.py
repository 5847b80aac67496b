"""A file rewritten in place within one tick of its clock keeps its version, and its labels
must not come from the bytes it had before (the "racily clean" entries of git; decision 0106).

A local file's version is read off its stamps (``mtime-size-inode-ctime``). Where the disk
keeps coarse stamps (whole seconds: ext4 with 128-byte inodes, FAT) two writes within one
tick share a version even though the status change time moves; on any disk a ``write`` is
stamped before its bytes are copied. Labels worked out for a version from bytes read within
a tick of its stamp could then be applied to other bytes.

The deterministic tests run a real local folder through a local store that reports stamps
cut to the second, as such a disk would (this machine's disks keep nanoseconds): the file is
read once as public, rewritten in place in the same second with restricted front matter at
the same size, its mtime put back, and read again through every read path. Before the fix
every one of them served the restricted bytes under the cached public labels. The threaded
tests race a real in-place writer against real reads on this machine's disk.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from bastion import (
    Knowledge,
    Labels,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    SyncWorkspace,
    Workspace,
)
from bastion.agents.openai import OpenAITools
from bastion.agents.tools import Toolset
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck
from bastion.knowledge.index.memory import MemoryIndex
from bastion.labels.settled import RACY_NS
from bastion.labels.store import DocumentLabels
from bastion.stores.local import LocalStore
from bastion.workspace.blocking import run_blocking

OWNER = Principal.of("owner", clearance="restricted")
READER = Principal.of("reader", clearance="internal")
HEADS = ("---\nclassification: public    \n---\n", "---\nclassification: restricted\n---\n")
BODIES = ("zebra opentext walrus \n", "zebra TOPSECRET walrus\n")
OPEN, SECRET = HEADS[0] + BODIES[0], HEADS[1] + BODIES[1]
FAR = 1_200_000
"""Bytes of filler before the last line in the files of the ``far`` reads (a range read that
far in does not read the head with it)."""


def _coarse(info: FileInfo) -> FileInfo:
    """``info`` as a disk keeping whole seconds would stamp it."""
    if info.changed_ns is None or info.version is None:
        return info
    changed = info.changed_ns // 1_000_000_000 * 1_000_000_000
    _, size, inode, _ = info.version.split("-")
    version = f"{int(info.mtime):x}-{size}-{inode}-{changed:x}"
    return FileInfo(
        info.path, info.kind, info.size, float(int(info.mtime)), version, info.labels, changed
    )


class WholeSeconds(LocalStore):
    """A local store on a disk that keeps whole seconds."""

    async def stat(self, path: VPath) -> FileInfo:
        return _coarse(await super().stat(path))

    async def list(self, path: VPath) -> list[FileInfo]:
        return [_coarse(info) for info in await super().list(path)]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        seen = None if check is None else (lambda info: check(_coarse(info)))
        info, data = await super().read_file(path, offset, length, check=seen)
        return _coarse(info), data


def _workspace(root: Path, store: LocalStore) -> tuple[SyncWorkspace, SyncWorkspace]:
    ws = Workspace(
        [Mount.of("/docs", store, labels=Labels(classification="public"))],
        policy=Policy.allow_all(),
        principal=OWNER,
        knowledge=Knowledge(MemoryIndex()),
    )
    return ws.sync(), ws.with_principal(READER).sync()


def _flip_in_place(path: Path, data: str) -> bool:
    """Rewrite ``path`` in place (same inode and size) and put its mtime back; whether its
    status change stayed in the same second (the version a coarse disk reports is then the
    same)."""
    before = os.stat(path)
    with open(path, "r+b") as f:
        f.write(data.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    return after.st_ctime_ns // 10**9 == before.st_ctime_ns // 10**9


def _early_in_a_second() -> None:
    """Wait for the start of a second when over half of this one is gone: a read, a flip and
    a read take milliseconds, so they stay within one second."""
    left = 1 - time.time() % 1
    if left < 0.5:
        time.sleep(left + 0.01)


def _tool_read(ws: SyncWorkspace, path: str) -> str:
    return str(run_blocking(OpenAITools(Toolset(ws.aio)).call("read_file", {"path": path})))


def _said(answer: Any) -> str:
    return repr(answer.answer) + repr(answer.citations)


READS: dict[str, Callable[[SyncWorkspace, SyncWorkspace], str]] = {
    "read_text": lambda _, r: r.read_text("/docs/a.md"),
    "read_bytes head": lambda _, r: r.read_bytes("/docs/a.md", start=0, end=60).decode(),
    "read_bytes range": lambda _, r: r.read_bytes("/docs/a.md", start=30, end=60).decode(),
    "read_bytes far": lambda _, r: r.read_bytes("/docs/a.md", start=FAR, end=FAR + 90).decode(),
    "read_lines": lambda _, r: repr(r.read_lines("/docs/a.md", offset=3, limit=1)),
    "read tool": lambda _, r: _tool_read(r, "/docs/a.md"),
    "grep": lambda _, r: r.grep("zebra", "/docs").format(),
    "search hit": lambda ws, r: (
        ws.index_directory("/docs") and repr(r.search("zebra walrus", mode="bm25").hits)
    ),
    "ask citation": lambda ws, r: (
        ws.index_directory("/docs") and _said(r.ask("What is zebra walrus?", mode="bm25"))
    ),
}


def _texts(*, far: bool) -> tuple[str, str]:
    """The public and the restricted text of one size; with ``far``, their last lines over
    :data:`FAR` bytes in."""
    if not far:
        return OPEN, SECRET
    pad = "filler\n" * (FAR // 7)
    return HEADS[0] + pad + BODIES[0], HEADS[1] + pad + BODIES[1]


def _told(read: Callable[[SyncWorkspace, SyncWorkspace], str], ws: Any, reader: Any) -> str:
    try:
        return read(ws, reader)
    except NotFoundError as exc:
        return str(exc)


@pytest.mark.parametrize("path", sorted(READS))
def test_a_same_second_rewrite_in_place_is_read_under_its_own_labels(
    tmp_path: Path, path: str
) -> None:
    read = READS[path]
    opened, secret = _texts(far=path == "read_bytes far")
    flipped = False
    for _ in range(5):
        (tmp_path / "a.md").unlink(missing_ok=True)
        ws, reader = _workspace(tmp_path, WholeSeconds(tmp_path))
        _early_in_a_second()
        (tmp_path / "a.md").write_text(opened)
        first = _told(read, ws, reader)
        assert "opentext" in first, first
        if not _flip_in_place(tmp_path / "a.md", secret):
            continue  # a second went by in between: that is no longer the same version
        flipped = True
        told = _told(read, ws, reader)
        assert "TOPSECRET" not in told and "restricted" not in told, told
        assert ws.read_text("/docs/a.md") == secret  # the owner reads the new bytes
        break
    assert flipped


def test_a_same_second_rewrite_of_a_sidecar_in_place_is_read_under_its_labels(
    tmp_path: Path,
) -> None:
    flipped = False
    for _ in range(5):
        for name in ("a.md", "a.md.labels.yaml"):
            (tmp_path / name).unlink(missing_ok=True)
        _, reader = _workspace(tmp_path, WholeSeconds(tmp_path))
        _early_in_a_second()
        (tmp_path / "a.md").write_text("zebra TOPSECRET walrus\n")
        (tmp_path / "a.md.labels.yaml").write_text("classification: public    \n")
        assert "TOPSECRET" in reader.read_text("/docs/a.md")  # public a moment ago
        if not _flip_in_place(tmp_path / "a.md.labels.yaml", "classification: restricted\n"):
            continue
        flipped = True
        with pytest.raises(NotFoundError):
            reader.read_text("/docs/a.md")
        assert reader.list("/docs") == []
        break
    assert flipped


def test_racy_labels_are_not_kept_until_the_stamp_is_safely_past(tmp_path: Path) -> None:
    labels = DocumentLabels(LocalStore(tmp_path), Labels(), Policy.allow_all().classifications)
    (tmp_path / "a.md").write_text(OPEN)
    a = VPath.parse("/a.md")
    info, data = run_blocking(labels.read_file(a))
    assert data == OPEN.encode() and info.labels == Labels()
    assert labels._cache == {}  # worked out from bytes read just after their stamp
    past = os.stat(tmp_path / "a.md").st_ctime_ns + RACY_NS
    while time.time_ns() <= past:
        time.sleep(0.005)
    assert run_blocking(labels.read_file(a))[0].labels == Labels()
    assert list(labels._cache.values()) == [Labels()]  # settled: kept


# -- real races on this machine's disk ---------------------------------------------------------

ROUNDS = 400


@contextmanager
def _flipping(path: Path) -> Iterator[list[int]]:
    """Rewrite ``path`` in place, public and restricted in turn, in a thread: the head
    first when tightening, the body first when loosening, so that the file never holds the
    secret under the public head, at any instant (one write of the whole text would, for
    a moment: a reader of that moment sees the secret under the public head, whoever
    reads)."""
    stop = threading.Event()
    count = [0]
    failed: list[BaseException] = []
    at = len(HEADS[0])
    tighten = [(HEADS[1].encode(), 0), (BODIES[1].encode(), at)]
    loosen = [(BODIES[0].encode(), at), (HEADS[0].encode(), 0)]

    def loop() -> None:
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                while not stop.is_set():
                    for data, where in loosen if count[0] % 2 else tighten:
                        os.pwrite(fd, data, where)
                    count[0] += 1
            finally:
                os.close(fd)
        except BaseException as exc:  # reported after the body
            failed.append(exc)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join()
    assert failed == []


RACED: dict[str, Callable[[SyncWorkspace], object]] = {
    "read_text": lambda r: r.read_text("/docs/a.md"),
    "read_bytes range": lambda r: r.read_bytes("/docs/a.md", start=30, end=60),
    "read_lines": lambda r: r.read_lines("/docs/a.md", offset=4, limit=1),
    "read tool": lambda r: _tool_read(r, "/docs/a.md"),
}


@pytest.mark.parametrize("path", sorted(RACED))
def test_an_in_place_writer_racing_reads_never_lets_the_secret_out(
    tmp_path: Path, path: str
) -> None:
    (tmp_path / "a.md").write_text(OPEN)
    _, reader = _workspace(tmp_path, LocalStore(tmp_path))
    read, leaks = RACED[path], 0
    with _flipping(tmp_path / "a.md") as flips:
        for _ in range(ROUNDS):
            with suppress(NotFoundError):
                leaks += "TOPSECRET" in repr(read(reader))
    assert flips[0] > 0
    assert leaks == 0


def test_an_in_place_writer_racing_the_index_never_lets_the_secret_into_a_hit(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.md").write_text(OPEN)
    ws, reader = _workspace(tmp_path, LocalStore(tmp_path))
    leaks = 0
    with _flipping(tmp_path / "a.md") as flips:
        for _ in range(ROUNDS // 4):
            ws.index_directory("/docs")
            leaks += "TOPSECRET" in repr(reader.search("zebra walrus", mode="bm25").hits)
    assert flips[0] > 0
    assert leaks == 0
