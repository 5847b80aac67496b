"""The local store opens a caller's commit gate (``core.offload.COMMIT_GATE``) in its worker
thread before each change is made, after its slow part: the change journal records there
(docs/changes.md). The gate sees the file as it was and the new file's temporary copy already
written; what the gate raises, the call raises, with nothing changed and no temporary file
left; a call abandoned while its gate is open has the gate's work taken back and changes
nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bastion import LocalStore
from bastion.core.errors import StoreError
from bastion.core.offload import COMMIT_GATE, Ticket
from bastion.core.paths import VPath


class Refused(StoreError):
    code = "refused_by_gate"


class Looking:
    """A gate that looks at the folder when it is opened, and may refuse."""

    def __init__(self, root: Path, refuse: bool = False) -> None:
        self.root = root
        self.refuse = refuse
        self.seen: dict[str, str] | None = None
        self.thread = ""
        self.undone = False

    def open(self, ticket: Ticket) -> None:
        self.thread = threading.current_thread().name
        self.seen = {p.name: p.read_text() for p in self.root.iterdir() if p.is_file()}
        if self.refuse:
            raise Refused("the journal cannot be written; nothing was changed")

    def undo(self) -> None:
        self.undone = True


async def _gated(gate: object, call: Callable[[], Awaitable[object]]) -> object:
    token = COMMIT_GATE.set(gate)  # type: ignore[arg-type]
    try:
        return await call()
    finally:
        COMMIT_GATE.reset(token)


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in root.iterdir()}


async def test_the_gate_opens_before_a_write_lands(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert store.gated_commits
    await store.write(VPath.parse("/a.txt"), b"old\n")
    gate = Looking(tmp_path)
    await _gated(gate, lambda: store.write(VPath.parse("/a.txt"), b"new\n"))
    assert gate.seen is not None and gate.seen["a.txt"] == "old\n"
    temps = [name for name in gate.seen if name != "a.txt"]
    assert len(temps) == 1 and gate.seen[temps[0]] == "new\n"  # the slow part was done
    assert gate.thread.startswith("bastion-local")  # in the store's worker, no hop of its own
    assert _files(tmp_path) == {"a.txt": "new\n"}


@pytest.mark.parametrize("what", ["overwrite", "create", "delete", "rename"])
async def test_a_refusing_gate_changes_nothing(tmp_path: Path, what: str) -> None:
    store = LocalStore(tmp_path)
    await store.write(VPath.parse("/a.txt"), b"old\n")
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "overwrite": lambda: store.write(VPath.parse("/a.txt"), b"new\n"),
        "create": lambda: store.write(VPath.parse("/b.txt"), b"new\n"),
        "delete": lambda: store.delete(VPath.parse("/a.txt")),
        "rename": lambda: store.rename(VPath.parse("/a.txt"), VPath.parse("/c.txt")),
    }
    gate = Looking(tmp_path, refuse=True)
    with pytest.raises(Refused, match="nothing was changed"):
        await _gated(gate, calls[what])
    assert gate.seen is not None and gate.seen["a.txt"] == "old\n"
    assert _files(tmp_path) == {"a.txt": "old\n"}  # no temporary file left either


async def test_a_call_abandoned_while_its_gate_is_open_changes_nothing(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    await store.write(VPath.parse("/a.txt"), b"old\n")
    entered, release, undone = threading.Event(), threading.Event(), threading.Event()

    class Slow:
        def open(self, ticket: Ticket) -> None:
            entered.set()
            release.wait(30)

        def undo(self) -> None:
            undone.set()

    task = asyncio.ensure_future(
        _gated(Slow(), lambda: store.write(VPath.parse("/a.txt"), b"new\n"))
    )
    assert await asyncio.to_thread(entered.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await asyncio.to_thread(undone.wait, 30)
    await store.write(VPath.parse("/z.txt"), b"z")  # waits for the abandoned write's lock
    await store.delete(VPath.parse("/z.txt"))
    assert _files(tmp_path) == {"a.txt": "old\n"}  # no temporary file left either
