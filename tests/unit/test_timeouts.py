"""A mount whose store hangs fails fast with a clear error; the other mounts keep working."""

from __future__ import annotations

import asyncio
import math

import pytest

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.core.errors import ConfigurationError, StoreUnavailableError
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck
from bastion.core.timeouts import TimedStore


class HangingStore(MemoryStore):
    """A memory store that stops answering while ``hung`` is set (a stopped backend)."""

    kind = "hanging"
    timeout = 30.0

    def __init__(self) -> None:
        super().__init__()
        self.hung = False
        self.extra = "inner attribute"

    async def _maybe_hang(self) -> None:
        if self.hung:
            await asyncio.Event().wait()

    async def stat(self, path: VPath) -> FileInfo:
        await self._maybe_hang()
        return await super().stat(path)

    async def list(self, path: VPath) -> list[FileInfo]:
        await self._maybe_hang()
        return await super().list(path)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        await self._maybe_hang()
        return await super().read_range(path, offset, length)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        await self._maybe_hang()
        return await super().read_file(path, offset, length, check=check)


@pytest.fixture
def setup() -> tuple[Workspace, HangingStore]:
    slow = HangingStore()
    ws = Workspace(
        [
            Mount.of("/remote", slow, "read_write", timeout=0.2),
            Mount.of("/local", MemoryStore(), "read_write"),
        ],
        policy=Policy.allow_all(),
    )
    return ws, slow


async def test_a_hung_store_fails_within_the_timeout_naming_the_mount(setup) -> None:
    ws, slow = setup
    await ws.write("/remote/a.txt", "hello")
    slow.hung = True
    calls = (
        lambda: ws.read_text("/remote/a.txt"),
        lambda: ws.stat("/remote/a.txt"),
        lambda: ws.list("/remote"),
    )
    for call in calls:
        with pytest.raises(StoreUnavailableError) as err:
            await asyncio.wait_for(call(), 5)
        message = str(err.value)
        assert "unresponsive" in message and "/remote" in message
        assert "\n" not in message and "hello" not in message


async def test_other_mounts_keep_working_and_the_mount_recovers(setup) -> None:
    ws, slow = setup
    await ws.write("/remote/a.txt", "hello")
    slow.hung = True
    with pytest.raises(StoreUnavailableError):
        await ws.read_text("/remote/a.txt")
    await ws.write("/local/b.txt", "still fine")
    assert await ws.read_text("/local/b.txt") == "still fine"
    slow.hung = False
    assert await ws.read_text("/remote/a.txt") == "hello"


async def test_refusal_is_audited(setup) -> None:
    ws, slow = setup
    await ws.write("/remote/a.txt", "hello")
    slow.hung = True
    with pytest.raises(StoreUnavailableError):
        await ws.read_text("/remote/a.txt")
    last = ws.audit.records[-1]  # type: ignore[attr-defined]
    assert last.operation == "read" and not last.allowed


def test_store_defaults_and_overrides() -> None:
    memory = Mount.of("/m", MemoryStore())
    assert isinstance(memory.store, MemoryStore)  # cannot hang: not wrapped
    slow = HangingStore()
    default = Mount.of("/s", slow)
    assert isinstance(default.store, TimedStore) and default.store.timeout == 30.0
    assert default.store.extra == "inner attribute"  # other attributes pass through
    assert default.store.kind == "hanging"
    assert isinstance(Mount.of("/s", slow, timeout=math.inf).store, HangingStore)
    assert Mount.of("/s", slow, timeout=2).store.timeout == 2
    with pytest.raises(ConfigurationError):
        Mount.of("/s", slow, timeout=0)
