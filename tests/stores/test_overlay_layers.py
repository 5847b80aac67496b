"""An overlay's chosen changes (apply or discard some paths, the rest stay), a file deleted then
written again, and the layer per thread: each thread's own folder under the layer store, its
name safe whatever the thread is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.core.overlay_port import LayerKey
from bastion.core.paths import VPath
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.overlay import OverlayStore
from bastion.stores.overlay_layers import ThreadLayers, layer_folder, overlay_of

P = VPath.parse


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "base"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("alpha\n")
    (root / "docs" / "b.md").write_text("beta\n")
    return root


def _overlay(base: Path) -> OverlayStore:
    (base.parent / "layer").mkdir(exist_ok=True)
    return OverlayStore(LocalStore(base), LocalStore(base.parent / "layer"))


async def test_a_file_deleted_then_written_again_is_applied_not_lost(base: Path) -> None:
    ov = _overlay(base)
    await ov.delete(P("/docs/a.md"))
    await ov.write(P("/docs/a.md"), b"again\n")
    assert await ov.changes() == {"/docs/a.md": "write"}
    report = await ov.apply()
    assert (report.applied, report.conflicts) == (["/docs/a.md"], [])
    assert (base / "docs" / "a.md").read_text() == "again\n"


async def test_a_file_deleted_then_written_again_still_sees_a_base_change(base: Path) -> None:
    ov = _overlay(base)
    await ov.read_all(P("/docs/a.md"))
    await ov.delete(P("/docs/a.md"))
    await ov.write(P("/docs/a.md"), b"again\n")
    (base / "docs" / "a.md").write_text("someone else\n")
    report = await ov.apply()
    assert report.conflicts == ["/docs/a.md"]
    assert (base / "docs" / "a.md").read_text() == "someone else\n"


async def test_apply_and_discard_take_chosen_paths_and_leave_the_rest(base: Path) -> None:
    ov = _overlay(base)
    await ov.write(P("/docs/a.md"), b"A\n")
    await ov.write(P("/docs/c.md"), b"C\n")
    await ov.delete(P("/docs/b.md"))
    report = await ov.apply([P("/docs/a.md"), P("/docs/b.md")])
    assert sorted(report.applied) == ["/docs/a.md", "/docs/b.md"]
    assert (base / "docs" / "a.md").read_text() == "A\n"
    assert not (base / "docs" / "b.md").exists()
    assert not (base / "docs" / "c.md").exists()
    assert await ov.changes() == {"/docs/c.md": "write"}
    await ov.discard([P("/docs/c.md")])
    assert await ov.changes() == {}
    assert not await ov.exists(P("/docs/c.md"))


async def test_discarding_a_deletion_shows_the_base_again(base: Path) -> None:
    ov = _overlay(base)
    await ov.delete(P("/docs"), recursive=True)
    assert not await ov.exists(P("/docs/a.md"))
    await ov.discard([P("/docs")])
    assert await ov.read_all(P("/docs/a.md")) == b"alpha\n"


async def test_each_thread_has_its_own_layer() -> None:
    base, layers = MemoryStore(), MemoryStore()
    await base.write(P("/a.md"), b"base\n")
    store = ThreadLayers(base, layers)
    now: list[str | None] = [None]
    store.layer_of = lambda: LayerKey("acme", now[0])
    await store.write(P("/a.md"), b"shared\n")
    now[0] = "t1"
    assert await store.read_all(P("/a.md")) == b"base\n"
    await store.write(P("/a.md"), b"t1\n")
    now[0] = None
    assert await store.read_all(P("/a.md")) == b"shared\n"
    assert await layers.read_all(P("/tenants/n-acme/threads/t-t1/a.md")) == b"t1\n"
    assert await layers.read_all(P("/tenants/n-acme/shared/a.md")) == b"shared\n"
    assert await store.overlay("t1", tenant="acme").changes() == {"/a.md": "write"}
    assert await base.read_all(P("/a.md")) == b"base\n"


@pytest.mark.parametrize("thread", ["..", ".", "a/b", "x" * 500, "new\nline", "ä/ö", ""])
def test_a_thread_folder_is_one_safe_name(thread: str) -> None:
    folder = layer_folder(thread, "acme")
    assert folder.parts[:3] == ("tenants", "n-acme", "threads")
    assert len(folder.parts) == 4
    name = folder.parts[3]
    assert name.startswith("t-") and len(name.encode()) <= 200
    assert name.isascii() and name.isprintable()
    assert layer_folder(thread + "x", "acme") != folder


def test_long_thread_names_stay_distinct() -> None:
    assert layer_folder("x" * 500, "a") != layer_folder("x" * 499 + "y", "a")


def test_the_store_used_directly_keeps_the_layout_of_before_tenants() -> None:
    """No principal (the store used outside any workspace): the folders layers had before
    they were kept per tenant, so an operator can still read and move an old layer."""
    assert layer_folder(None, None) == P("/shared")
    assert layer_folder("t1", None) == P("/threads/t-t1")
    assert layer_folder("a/b", None) == P("/threads/t-a%2Fb")


def test_a_file_layer_folder_is_made(tmp_path: Path) -> None:
    store = overlay_of(MemoryStore(), "file:deep/layers", relative_to=tmp_path)
    assert isinstance(store, ThreadLayers)
    assert (tmp_path / "deep" / "layers").is_dir()


@pytest.mark.parametrize("layers", ["file:base/.layers", "file:base", "file:."])
def test_layers_inside_the_base_folder_or_around_it_are_refused(base: Path, layers: str) -> None:
    from bastion.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="keep the layers outside the base folder"):
        overlay_of(LocalStore(base), layers, relative_to=base.parent)


def test_a_refused_layer_folder_is_not_made(base: Path) -> None:
    from bastion.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        overlay_of(LocalStore(base), "file:base/new-layers", relative_to=base.parent)
    assert not (base / "new-layers").exists()


async def test_a_path_written_again_after_an_apply_killed_takes_the_new_base(base: Path) -> None:
    """A kill after a file reached the base and left the layer, before the manifest forgot
    the version it took: the next write through the overlay takes the base as it is now."""
    ov = _overlay(base)
    await ov.write(P("/docs/a.md"), b"first\n")
    taken = (await ov._manifest())[0].taken["/docs/a.md"]
    assert await ov._apply_file(P("/docs/a.md"), taken)  # what apply does per file, then killed
    assert (base / "docs" / "a.md").read_text() == "first\n"
    await ov.write(P("/docs/a.md"), b"second\n")
    report = await ov.apply()
    assert (report.applied, report.conflicts) == (["/docs/a.md"], [])
    assert (base / "docs" / "a.md").read_text() == "second\n"
