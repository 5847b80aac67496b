"""Red-team variants of issue 16 under faults (class: *lost updates and faults*;
docs/security.md, docs/stores.md).

``write(..., backup=True)`` writes on condition of the version it backed up. On a store that
cannot check conditions across processes it goes on unconditionally (that store refuses the
condition before touching anything). These tests pin that a *fault* on the conditional write
(a full disk, an object store's 500s) is never taken for that refusal: the write fails with
the fault, the condition is never dropped, and what another writer put there meanwhile is
never overwritten unseen.
"""

from __future__ import annotations

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import StoreError, StoreUnavailableError
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath

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
    tmp_path: object,
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
