"""A file's move on a local mount is admitted once (issue 31, decision 0107): the guard checks
it before the file's labels are carried, and the rename that follows is not checked again. What
the second check stood for still holds: a name that appears at the target after the check is
never written over (the rename itself refuses to replace), a hidden file there is refused in
policy words, a blind move still replaces a file there; and the worker hop hands back results,
errors and cancellations as before."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from bastion import LocalStore, Mount, Policy, Principal, Rule, Workspace
from bastion.core.admission import Admission
from bastion.core.errors import AlreadyExistsError, PolicyDeniedError
from bastion.core.guard import GuardedStore
from bastion.core.offload import Workers

ADMIN = Principal.of("admin", clearance="restricted")
READER = Principal.of("reader", clearance="internal")


def _ws(tmp_path: Path, principal: Principal = ADMIN) -> Workspace:
    return Workspace(
        [Mount.of("/d", LocalStore(tmp_path), scope="read_write")],
        policy=Policy.allow_all(),
        principal=principal,
    )


async def test_a_file_move_runs_the_move_admission_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _ws(tmp_path)
    await ws.write("/d/a.txt", "alpha\n")
    calls: list[str] = []
    move = Admission.move

    async def counted(self: Admission, *args: object, **kwargs: object) -> object:
        calls.append("move")
        return await move(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Admission, "move", counted)
    await ws.move("/d/a.txt", "/d/b.txt")
    assert calls == ["move"]
    assert (tmp_path / "b.txt").read_text() == "alpha\n"
    assert not (tmp_path / "a.txt").exists()


async def test_a_name_made_after_the_check_is_not_written_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _ws(tmp_path)
    await ws.write("/d/a.txt", "alpha\n")
    carried = GuardedStore.carried_labels

    async def racing(self: GuardedStore, *args: object, **kwargs: object) -> bytes | None:
        # another program creates the target between the move's check and its rename
        (tmp_path / "b.txt").write_text("theirs\n")
        return await carried(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(GuardedStore, "carried_labels", racing)
    with pytest.raises(AlreadyExistsError):
        await ws.move("/d/a.txt", "/d/b.txt")
    assert (tmp_path / "b.txt").read_text() == "theirs\n"
    assert (tmp_path / "a.txt").read_text() == "alpha\n"


async def test_a_move_onto_a_hidden_file_is_refused_as_policy(tmp_path: Path) -> None:
    admin, reader = _ws(tmp_path), _ws(tmp_path, READER)
    await admin.write("/d/secret.md", "---\nclassification: restricted\n---\nkey\n")
    await reader.write("/d/mine.txt", "mine\n")
    for overwrite in (False, True):
        with pytest.raises(PolicyDeniedError):
            await reader.move("/d/mine.txt", "/d/secret.md", overwrite=overwrite)
    assert "key" in (tmp_path / "secret.md").read_text()
    assert (tmp_path / "mine.txt").read_text() == "mine\n"


async def test_a_blind_move_replaces_a_file_there(tmp_path: Path) -> None:
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "drop.txt").write_text("old\n")
    (tmp_path / "new.txt").write_text("new\n")
    rules = (Rule.deny(["read", "list"], "/d/inbox/**"), Rule.allow("*", "/**"))
    ws = Workspace(
        [Mount.of("/d", LocalStore(tmp_path), scope="read_write")], policy=Policy(rules=rules)
    )
    await ws.move("/d/new.txt", "/d/inbox/drop.txt")
    assert (tmp_path / "inbox" / "drop.txt").read_text() == "new\n"
    assert not (tmp_path / "new.txt").exists()


async def test_the_worker_hop_hands_back_results_errors_and_cancellation() -> None:
    workers = Workers("test-hop", threads=2)
    try:
        assert await workers.run(lambda a, b: a + b, 2, 3) == 5

        def fails() -> None:
            raise ValueError("from the worker")

        with pytest.raises(ValueError, match="from the worker"):
            await workers.run(fails)
        started, release, done = threading.Event(), threading.Event(), threading.Event()

        def waits() -> None:
            started.set()
            release.wait(30)
            done.set()

        task = asyncio.ensure_future(workers.run(waits))
        assert await asyncio.to_thread(started.wait, 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        assert await asyncio.to_thread(done.wait, 30)
        assert await workers.run(lambda: "still serving") == "still serving"
    finally:
        workers.close()


async def test_a_sidecar_made_after_the_store_looked_is_still_dropped(tmp_path: Path) -> None:
    """The sidecar of a moved or deleted file is dropped unless the store knows from memory
    that none is there: one made by another program after the store looked (and found none)
    is seen, and goes with its file."""
    ws = _ws(tmp_path)
    for name in ("a.txt", "b.txt"):
        await ws.write(f"/d/{name}", "text\n")  # looks the sidecar name up: none there
        (tmp_path / f"{name}.labels.yaml").write_text("classification: internal\n")
    await ws.delete("/d/a.txt")
    assert not (tmp_path / "a.txt").exists()
    assert not (tmp_path / "a.txt.labels.yaml").exists()
    await ws.move("/d/b.txt", "/d/c.txt")
    assert not (tmp_path / "b.txt.labels.yaml").exists()
    moved = await ws.stat("/d/c.txt")
    assert moved.labels is not None and moved.labels.classification == "internal"
