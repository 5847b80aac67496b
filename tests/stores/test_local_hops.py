"""What the local store sends to its worker threads (issue 31): a hop costs as much as a small
read, and on a loaded machine a scheduler slice. A new file's write is one hop (the admission
does not look at a name the kernel has never seen: the write is a creation, and only what it
finds there is looked at; the sidecar lookup that labels its info is answered from memory);
an edit and a delete are one hop, a move two (its target's look, and the rename); and grep
over files in memory hops only to list folders, never per file; the answers are unchanged
(a sidecar made by another program is still seen)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bastion import LocalStore, Mount, Policy, Principal, Workspace
from bastion.core.offload import Workers

READER = Principal.of("reader", clearance="internal")
ADMIN = Principal.of("admin", clearance="restricted")


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calls sent to worker threads, in order."""
    seen: list[str] = []
    run = Workers.run

    async def counted(self: Workers, fn: Callable[..., Any], *args: Any) -> Any:
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await run(self, fn, *args)

    monkeypatch.setattr(Workers, "run", counted)
    return seen


def _store(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path)
    if store._cached is None:  # no openat2(RESOLVE_CACHED) here: every look is a hop
        pytest.skip("this kernel or filesystem has no cached lookups")
    return store


async def test_a_new_file_is_written_in_one_hop(tmp_path: Path, hops: list[str]) -> None:
    ws = Workspace(
        [Mount.of("/d", _store(tmp_path), scope="read_write")], policy=Policy.allow_all()
    )
    await ws.write("/d/warm.txt", "warm\n")
    hops.clear()
    info = await ws.write("/d/new.txt", "hello\n")
    assert hops == ["_write"]
    assert info.labels is not None and info.labels.classification == "public"
    assert (tmp_path / "new.txt").read_text() == "hello\n"


async def test_edit_delete_and_move_hop_once_or_twice(tmp_path: Path, hops: list[str]) -> None:
    ws = Workspace(
        [Mount.of("/d", _store(tmp_path), scope="read_write")], policy=Policy.allow_all()
    )
    for name in ("e.txt", "m.txt", "x.txt"):
        await ws.write(f"/d/{name}", "EDITME\n")
    hops.clear()
    await ws.edit("/d/e.txt", "EDITME", "EDITED")
    assert hops == ["_write"]
    hops.clear()
    await ws.delete("/d/x.txt")
    assert hops == ["_delete"]
    hops.clear()
    moved = await ws.move("/d/m.txt", "/d/moved.txt")
    assert hops == ["_stat", "_rename"]  # the target's sidecar is answered from memory
    assert moved.labels is not None and moved.labels.classification == "public"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.txt", "moved.txt"]
    assert (tmp_path / "e.txt").read_text() == "EDITED\n"


async def test_a_sidecar_made_after_the_write_is_still_seen(tmp_path: Path) -> None:
    mounts = [Mount.of("/d", _store(tmp_path), scope="read_write")]
    ws = Workspace(mounts, policy=Policy.allow_all(), principal=ADMIN)
    await ws.write("/d/a.txt", "needle\n")
    (tmp_path / "a.txt.labels.yaml").write_text("classification: restricted\n")
    assert (await ws.stat("/d/a.txt")).labels.classification == "restricted"
    reader = Workspace(ws.mounts, policy=Policy.allow_all(), principal=READER)
    assert (await reader.grep("needle", "/d")).matches == ()


async def test_grep_hops_per_folder_not_per_file(tmp_path: Path, hops: list[str]) -> None:
    store = _store(tmp_path)
    for f in range(3):
        folder = tmp_path / f"f{f}"
        folder.mkdir()
        for n in range(40):
            (folder / f"{n}.txt").write_text(f"line {n}\nneedle {f}/{n}\n")
    (tmp_path / "f1" / "7.txt.labels.yaml").write_text("classification: restricted\n")
    ws = Workspace([Mount.of("/d", store)], policy=Policy.allow_all(), principal=READER)
    first = await ws.grep("needle", "/d")
    hops.clear()
    again = await ws.grep("needle", "/d")
    assert again.matches == first.matches
    assert len(again.matches) == 119 and "/d/f1/7.txt" not in {m.path for m in again.matches}
    # one trip per level of folders: the root, then the three folders below it together
    assert hops == ["scan_ahead", "scan_ahead"], hops
