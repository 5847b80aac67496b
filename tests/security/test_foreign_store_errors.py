"""A store that raises outside the port's errors (a plug-in's ``OSError`` naming its host
path, a driver's ``RuntimeError`` quoting a secret) is told as a failure of its mount, without
those words, at every call; the operator log keeps them. Found by the errors red team: the
guard only reworded the port's own errors, so a third-party store's host path reached the
caller as it was."""

from __future__ import annotations

import logging

import pytest

from bastion import Mount, Policy, Principal, StoreError, Workspace
from bastion.core.paths import VPath
from bastion.stores.memory import MemoryStore

HOST = "/srv/tenant-b/secret-plans"


class Leaky(MemoryStore):
    """A store whose every call fails the way a careless plug-in's would."""

    kind = "leaky"
    timeout = 30.0

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def stat(self, path: VPath) -> object:  # type: ignore[override]
        raise self.error

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        raise self.error

    async def list(self, path: VPath) -> list[object]:  # type: ignore[override]
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        OSError(5, "Input/output error", f"{HOST}/pay.md"),
        RuntimeError(f"driver failed reading {HOST}/pay.md with password=hunter2"),
        KeyError(f"{HOST}/pay.md"),
    ],
    ids=["oserror", "runtime", "keyerror"],
)
async def test_a_foreign_error_is_a_failure_of_the_mount_without_its_words(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    ws = Workspace(
        [Mount.of("/team", Leaky(error))],
        policy=Policy.allow_all(),
        principal=Principal.of("agent"),
    )
    calls = (
        lambda: ws.read_text("/team/pay.md"),
        lambda: ws.stat("/team/pay.md"),
        lambda: ws.list("/team"),
    )
    for call in calls:
        with caplog.at_level(logging.WARNING), pytest.raises(StoreError) as caught:
            await call()
        told = str(caught.value)
        assert f"mount /team (leaky): the store failed ({type(error).__name__})" in told
        assert HOST not in told and "hunter2" not in told
        assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert HOST in caplog.text  # the operator log has the details
