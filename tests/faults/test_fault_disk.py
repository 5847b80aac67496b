"""A local mount whose disk fills up, or is remounted read-only, under the workspace (and a
SQLite mount whose disk fills up).

The folder is a real tmpfs of 1 MiB (``mount -t tmpfs -o size=1m``); the test skips, naming
what is missing, only where it may not mount one. Each fault: the old content is intact (or
the new content whole), the error is one line naming the mount, nothing half-written stays on
the disk, the index still answers with what the file holds, and once the fault is gone the
next operation works.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import Knowledge, LocalStore, Mount, Policy, Workspace
from bastion.core.errors import StoreError
from bastion.stores.sqlite import SqliteStore

from .support import NO_SPACE, READ_ONLY, Tmpfs, fill, says, tmpfs


@pytest.fixture
def disk() -> Iterator[Tmpfs]:
    with tmpfs("1m") as mounted:
        yield mounted


@pytest.fixture
def ws(disk: Tmpfs) -> Workspace:
    return Workspace(
        [Mount.of("/vault", LocalStore(disk.path))],
        policy=Policy.allow_all(),
        knowledge=Knowledge(),
    )


def _on_disk(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def _snippets(ws: Workspace, query: str) -> list[str]:
    return [h.snippet for h in (await ws.search(query, mode="bm25")).hits]


async def test_a_full_disk_keeps_the_old_content_and_recovers(disk: Tmpfs, ws: Workspace) -> None:
    await ws.write("/vault/notes.md", "# Notes\n\nfalcon sighting one\n")
    filler = fill(disk.path)

    with pytest.raises(StoreError) as caught:
        await ws.write("/vault/notes.md", "# Notes\n\nfalcon sighting two\n" * 50)
    says(str(caught.value), "/vault/notes.md", *NO_SPACE)
    with pytest.raises(StoreError) as created:
        await ws.write("/vault/new.md", "# New\n\nkestrel\n")
    says(str(created.value), "/vault/new.md", *NO_SPACE)

    assert await ws.read_text("/vault/notes.md") == "# Notes\n\nfalcon sighting one\n"
    assert not await ws.exists("/vault/new.md")
    assert _on_disk(disk.path) == ["filler.bin", "notes.md"]  # no temporary file left behind
    assert await _snippets(ws, "falcon") == ["# Notes\n\nfalcon sighting one"]

    filler.unlink()  # the fault is gone
    await ws.write("/vault/notes.md", "# Notes\n\nfalcon sighting two\n")
    assert await ws.read_text("/vault/notes.md") == "# Notes\n\nfalcon sighting two\n"
    assert await _snippets(ws, "falcon") == ["# Notes\n\nfalcon sighting two"]


async def test_a_write_larger_than_the_free_space_leaves_nothing_half_written(
    disk: Tmpfs, ws: Workspace
) -> None:
    await ws.write("/vault/log.txt", "line one\n")
    big = "x" * (2 * 1024 * 1024)  # twice the disk
    with pytest.raises(StoreError) as caught:
        await ws.write("/vault/log.txt", big)
    says(str(caught.value), "/vault/log.txt", *NO_SPACE)
    with pytest.raises(StoreError) as appended:
        await ws.append("/vault/log.txt", big)
    says(str(appended.value), "/vault/log.txt", *NO_SPACE)
    assert await ws.read_text("/vault/log.txt") == "line one\n"
    assert _on_disk(disk.path) == ["log.txt"]
    st = os.statvfs(disk.path)
    assert st.f_bavail * st.f_frsize > 900 * 1024  # the space of the failed writes came back

    await ws.append("/vault/log.txt", "line two\n")
    assert await ws.read_text("/vault/log.txt") == "line one\nline two\n"


async def test_a_read_only_remount_refuses_writes_and_recovers(disk: Tmpfs, ws: Workspace) -> None:
    await ws.write("/vault/plan.md", "# Plan\n\nheron survey in May\n")
    disk.remount("ro")
    try:
        for where, attempt in (
            ("/vault/plan.md", ws.write("/vault/plan.md", "# Plan\n\nheron survey in June\n")),
            ("/vault/other.md", ws.write("/vault/other.md", "# Other\n\nheron\n")),
            ("/vault/plan.md", ws.append("/vault/plan.md", "more\n")),
            ("/vault/plan.md", ws.delete("/vault/plan.md")),
            ("/vault/sub", ws.mkdir("/vault/sub")),
            # The store names the source of a move; the caller reads it under the mount.
            ("/vault/plan.md", ws.move("/vault/plan.md", "/vault/moved.md")),
        ):
            with pytest.raises(StoreError) as caught:
                await attempt
            says(str(caught.value), where, *READ_ONLY)
        # reads, listings and search go on
        assert await ws.read_text("/vault/plan.md") == "# Plan\n\nheron survey in May\n"
        assert [e.path.name for e in await ws.list("/vault")] == ["plan.md"]
        assert await _snippets(ws, "heron") == ["# Plan\n\nheron survey in May"]
    finally:
        disk.remount("rw")
    await ws.write("/vault/plan.md", "# Plan\n\nheron survey in June\n")
    assert await ws.read_text("/vault/plan.md") == "# Plan\n\nheron survey in June\n"
    assert await _snippets(ws, "heron") == ["# Plan\n\nheron survey in June"]


async def test_a_full_disk_under_a_sqlite_mount_keeps_the_old_content_and_recovers(
    disk: Tmpfs,
) -> None:
    # (A read-only remount cannot be made under SQLite: the kernel refuses it while the
    # database file is open for writing.)
    store = SqliteStore(disk.path / "ws.db")
    ws = Workspace([Mount.of("/db", store)], policy=Policy.allow_all(), knowledge=Knowledge())
    try:
        await ws.write("/db/notes.md", "# Notes\n\nplover one\n")
        filler = fill(disk.path)
        for where, attempt in (
            ("/db/notes.md", ws.write("/db/notes.md", "# Notes\n\nplover two\n" * 2000)),
            ("/db/new.md", ws.write("/db/new.md", "# New\n\n" + "plover\n" * 2000)),
        ):
            with pytest.raises(StoreError) as caught:
                await attempt
            says(str(caught.value), where, *NO_SPACE)
        assert await ws.read_text("/db/notes.md") == "# Notes\n\nplover one\n"
        assert not await ws.exists("/db/new.md")
        assert await _snippets(ws, "plover") == ["# Notes\n\nplover one"]

        filler.unlink()  # the fault is gone
        await ws.write("/db/notes.md", "# Notes\n\nplover two\n")
        assert await ws.read_text("/db/notes.md") == "# Notes\n\nplover two\n"
        assert await _snippets(ws, "plover") == ["# Notes\n\nplover two"]
    finally:
        store.close()
