"""An overlay keeps the base unchanged until apply: writes, appends, deletes and moves land in
the layer; apply writes each file into the base, refuses one whose base changed since the layer
took it, and resumes after a kill; discard drops the layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.core.errors import NotFoundError
from bastion.core.models import WriteMode
from bastion.core.paths import VPath
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.overlay import MANIFEST, OverlayStore

P = VPath.parse


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    base, layer = tmp_path / "base", tmp_path / "layer"
    (base / "docs").mkdir(parents=True)
    (base / "docs" / "a.md").write_text("alpha\n")
    (base / "docs" / "b.md").write_text("beta\n")
    (base / "old").mkdir()
    (base / "old" / "c.md").write_text("gamma\n")
    layer.mkdir()
    return base, layer


def _overlay(folders: tuple[Path, Path]) -> OverlayStore:
    return OverlayStore(LocalStore(folders[0]), LocalStore(folders[1]))


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_changes_land_in_the_layer_and_the_base_is_untouched(
    folders: tuple[Path, Path],
) -> None:
    before = _tree(folders[0])
    ov = _overlay(folders)
    await ov.write(P("/docs/a.md"), b"ALPHA\n")
    await ov.write(P("/docs/b.md"), b"more\n", mode=WriteMode.APPEND)
    await ov.write(P("/docs/new.md"), b"new\n", mode=WriteMode.CREATE)
    await ov.delete(P("/old"), recursive=True)
    await ov.rename(P("/docs/new.md"), P("/docs/moved.md"))
    assert _tree(folders[0]) == before
    assert await ov.read_all(P("/docs/a.md")) == b"ALPHA\n"
    assert await ov.read_all(P("/docs/b.md")) == b"beta\nmore\n"
    assert [str(e.path) for e in await ov.list(P("/"))] == ["/docs"]
    names = [e.path.name for e in await ov.list(P("/docs"))]
    assert names == ["a.md", "b.md", "moved.md"]
    with pytest.raises(NotFoundError):
        await ov.stat(P("/old/c.md"))
    with pytest.raises(NotFoundError):
        await ov.stat(MANIFEST)
    assert await ov.changes() == {
        "/old": "delete",
        "/docs/a.md": "write",
        "/docs/b.md": "write",
        "/docs/moved.md": "write",
    }


async def test_apply_writes_the_layer_into_the_base_and_empties_it(
    folders: tuple[Path, Path],
) -> None:
    ov = _overlay(folders)
    await ov.write(P("/docs/a.md"), b"ALPHA\n")
    await ov.write(P("/docs/new.md"), b"new\n")
    await ov.delete(P("/old"), recursive=True)
    report = await ov.apply()
    assert sorted(report.applied) == ["/docs/a.md", "/docs/new.md", "/old"]
    assert report.conflicts == []
    assert _tree(folders[0]) == {
        "docs/a.md": "ALPHA\n",
        "docs/b.md": "beta\n",
        "docs/new.md": "new\n",
    }
    assert list(folders[1].iterdir()) == []
    assert await ov.changes() == {}


async def test_a_file_changed_in_the_base_since_the_layer_took_it_is_a_conflict(
    folders: tuple[Path, Path],
) -> None:
    ov = _overlay(folders)
    assert await ov.read_all(P("/docs/a.md")) == b"alpha\n"  # the agent read this version
    (folders[0] / "docs" / "a.md").write_text("a person's edit\n")
    await ov.write(P("/docs/a.md"), b"the agent's edit\n")
    await ov.write(P("/docs/b.md"), b"fine\n")
    (folders[0] / "docs" / "later.md").write_text("made in the base\n")
    await ov.write(P("/docs/later2.md"), b"x\n")
    report = await ov.apply()
    assert report.conflicts == ["/docs/a.md"]
    assert sorted(report.applied) == ["/docs/b.md", "/docs/later2.md"]
    assert (folders[0] / "docs" / "a.md").read_text() == "a person's edit\n"
    assert await ov.changes() == {"/docs/a.md": "write"}  # kept for a person to decide


async def test_a_file_created_in_the_base_meanwhile_is_a_conflict_too(
    folders: tuple[Path, Path],
) -> None:
    ov = _overlay(folders)
    await ov.write(P("/docs/n.md"), b"agent\n")
    (folders[0] / "docs" / "n.md").write_text("person\n")
    assert (await ov.apply()).conflicts == ["/docs/n.md"]
    assert (folders[0] / "docs" / "n.md").read_text() == "person\n"


async def test_apply_resumes_after_a_kill_between_the_base_write_and_the_cleanup(
    folders: tuple[Path, Path],
) -> None:
    ov = _overlay(folders)
    await ov.write(P("/docs/a.md"), b"ALPHA\n")
    await ov.write(P("/docs/b.md"), b"BETA\n")
    # A kill -9 after the first file reached the base, before the layer let go of it:
    (folders[0] / "docs" / "a.md").write_text("ALPHA\n")
    again = _overlay(folders)  # a new process
    report = await again.apply()
    assert sorted(report.applied) == ["/docs/a.md", "/docs/b.md"] and report.conflicts == []
    assert _tree(folders[0])["docs/b.md"] == "BETA\n"


async def test_discard_drops_every_change(folders: tuple[Path, Path]) -> None:
    before = _tree(folders[0])
    ov = _overlay(folders)
    await ov.write(P("/docs/a.md"), b"gone soon\n")
    await ov.delete(P("/docs/b.md"))
    await ov.discard()
    assert await ov.read_all(P("/docs/a.md")) == b"alpha\n"
    assert await ov.read_all(P("/docs/b.md")) == b"beta\n"
    assert await ov.changes() == {} and _tree(folders[0]) == before


async def test_a_deleted_folder_made_again_is_empty_and_applies_as_such(
    folders: tuple[Path, Path],
) -> None:
    ov = _overlay(folders)
    await ov.delete(P("/old"), recursive=True)
    await ov.mkdir(P("/old"))
    await ov.write(P("/old/fresh.md"), b"fresh\n")
    assert [e.path.name for e in await ov.list(P("/old"))] == ["fresh.md"]
    await ov.apply()
    assert sorted(p.name for p in (folders[0] / "old").iterdir()) == ["fresh.md"]


async def test_the_overlay_record_is_no_name_a_caller_can_use() -> None:
    ov = OverlayStore(MemoryStore(), MemoryStore())
    with pytest.raises(Exception, match="overlay's own record"):
        await ov.write(MANIFEST, b"{}")
    await ov.write(P("/x.md"), b"x")
    assert [str(e.path) for e in await ov.list(P("/"))] == ["/x.md"]
