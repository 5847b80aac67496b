"""A fault on a conditional write is never taken for a store that cannot check conditions: the
condition is never dropped (red-team variants of issue 16, class: *lost updates and faults*;
docs/security.md, docs/stores.md).

``write(..., backup=True)`` writes on condition of the version it backed up. On a store that
cannot check conditions across processes it goes on unconditionally (that store refuses the
condition before touching anything). These tests pin that a *fault* on the conditional write
(a full disk, an object store's 500s) is never taken for that refusal: the write fails with
the fault, the condition is never dropped, and what another writer put there meanwhile is
never overwritten unseen.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Workspace
from bastion.agents.tools.session import ToolSession
from bastion.core.errors import StoreError, StoreUnavailableError
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath

from .support import NO_SPACE, READ_ONLY, fill, says, tmpfs

ADMIN = Principal.of("admin")


class _FaultAfterAnotherWriter(MemoryStore):
    """A memory store whose next conditional write first lets another writer in, then fails
    with ``fault`` (as a full disk or a server error would: nothing of it written)."""

    def __init__(self, fault: StoreError) -> None:
        super().__init__()
        self.fault: StoreError | None = None
        self._armed = fault
        self.theirs = b"theirs\n"

    def arm(self) -> None:
        self.fault = self._armed

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode | str = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        if if_version is not None and self.fault is not None:
            fault, self.fault = self.fault, None
            await super().write(path, self.theirs)
            raise fault
        return await super().write(path, data, mode=mode, if_version=if_version)


FAULTS = [
    StoreError("/f.txt: no space left on the disk of this mount; free space and retry"),
    StoreError("/f.txt: the object store failed (500); retry later"),
    StoreUnavailableError("/f.txt: filesystem unresponsive; retry later"),
]


@pytest.mark.parametrize("fault", FAULTS, ids=["disk-full", "server-500", "unavailable"])
@pytest.mark.parametrize("mode", [WriteMode.OVERWRITE, WriteMode.APPEND])
async def test_a_fault_on_a_backed_up_write_never_drops_its_condition(
    fault: StoreError, mode: WriteMode
) -> None:
    store = _FaultAfterAnotherWriter(fault)
    ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=ADMIN)
    await ws.write("/m/f.txt", "original\n")
    store.arm()
    with pytest.raises(StoreError):
        await ws.write("/m/f.txt", "mine\n", mode=mode, backup=True)
    # the other writer's acknowledged content is there, not overwritten by a retry without
    # the condition (which would also have left a backup of something else than it replaced)
    assert await ws.read_text("/m/f.txt") == "theirs\n"
    assert await ws.read_text("/m/f.txt.bak") == "original\n"
    await ws.write("/m/f.txt", "mine\n", backup=True)  # the fault gone: backed up, written
    assert await ws.read_text("/m/f.txt") == "mine\n"
    assert await ws.read_text("/m/f.txt.bak") == "theirs\n"


async def test_a_store_that_refuses_conditions_still_takes_backed_up_writes(
    tmp_path: Path,
) -> None:
    """The refusal itself (a plain fsspec folder shared by processes) keeps its weaker
    promise: the write goes on unconditionally, as before."""
    import fsspec

    from bastion.stores.fsspec import FsspecStore

    store = FsspecStore(fsspec.filesystem("file"), root=str(tmp_path))
    ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=ADMIN)
    await ws.write("/m/f.txt", "one\n")
    await ws.write("/m/f.txt", "two\n", backup=True)
    assert await ws.read_text("/m/f.txt") == "two\n"
    assert await ws.read_text("/m/f.txt.bak") == "one\n"


# -- the agent tools on a full or read-only disk -----------------------------------------------


async def test_the_tools_on_a_full_disk_keep_the_old_content_and_the_read() -> None:
    """Every changing tool call fails in one line naming the mount and the cause; the file
    keeps its old content, no temporary file is left, and the session's read still holds
    (nothing changed), so the same call goes through once space is back."""
    with tmpfs("1m") as disk:
        ws = Workspace(
            [Mount.of("/vault", LocalStore(disk.path))], policy=Policy.allow_all(), principal=ADMIN
        )
        path = VPath.parse("/vault/notes.md")
        await ws.write(path, "# Notes\n\nfalcon one\n")
        session = ToolSession(ws)
        await session.read_page(path, 0, 100)
        filler = fill(disk.path)
        attempts = [
            ("/vault/notes.md", session.write(path, "# Notes\n\nfalcon two\n" * 20)),
            # the backup is written first: its own name is the one that did not fit
            ("/vault/notes.md.bak", session.write(path, "# Notes\n\ntwo\n", backup=True)),
            ("/vault/notes.md", session.edit(path, "one", "two " * 40, replace_all=False)),
            ("/vault/notes.md", session.append(path, "falcon three\n" * 40)),
        ]
        for where, attempt in attempts:
            with pytest.raises(StoreError) as caught:
                await attempt
            says(str(caught.value), where, *NO_SPACE)
        assert await ws.read_text(path) == "# Notes\n\nfalcon one\n"
        assert sorted(os.listdir(disk.path)) == ["filler.bin", "notes.md"]
        filler.unlink()
        await session.edit(path, "falcon one", "falcon two", replace_all=False)  # no re-read
        assert await ws.read_text(path) == "# Notes\n\nfalcon two\n"


async def test_the_tools_on_a_read_only_disk_keep_the_old_content() -> None:
    with tmpfs("1m") as disk:
        ws = Workspace(
            [Mount.of("/vault", LocalStore(disk.path))], policy=Policy.allow_all(), principal=ADMIN
        )
        path = VPath.parse("/vault/plan.md")
        await ws.write(path, "# Plan\n\nheron in May\n")
        session = ToolSession(ws)
        await session.read_page(path, 0, 100)
        disk.remount("ro")
        try:
            for attempt in (
                session.write(path, "# Plan\n\nheron in June\n"),
                session.edit(path, "May", "June", replace_all=False),
                session.append(path, "more\n"),
                session.delete(path, recursive=False),
            ):
                with pytest.raises(StoreError) as caught:
                    await attempt
                says(str(caught.value), "/vault/plan.md", *READ_ONLY)
            assert await ws.read_text(path) == "# Plan\n\nheron in May\n"
        finally:
            disk.remount("rw")
        await session.edit(path, "May", "June", replace_all=False)
        assert await ws.read_text(path) == "# Plan\n\nheron in June\n"
