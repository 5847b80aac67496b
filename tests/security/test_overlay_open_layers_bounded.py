"""A caller names as many threads (and a program as many tenants) as it likes: the layers an
overlay holds open in memory stay bounded (the least recently used are closed; a layer lives on
its store, so a closed one opens again with its changes), and closing a layer forgets nothing
a later apply needs (the base version a write was based on)."""

from __future__ import annotations

from pathlib import Path

from bastion import Policy, Principal, Workspace
from bastion.config import MountConfig
from bastion.core.overlay_port import LayerKey, overlay_below
from bastion.core.paths import VPath
from bastion.stores.local import LocalStore
from bastion.stores.memory import MemoryStore
from bastion.stores.overlay_layers import ThreadLayers, layer_folder

P = VPath.parse


async def test_a_principal_naming_thousands_of_threads_keeps_memory_bounded(
    tmp_path: Path,
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "app.py").write_text("print('base')\n")
    mount = MountConfig("/code", "file:project", overlay="file:layers").open(tmp_path)
    layered = overlay_below(mount.store)
    assert isinstance(layered, ThreadLayers)
    ws = Workspace([mount], policy=Policy.allow_all(), principal=Principal.of("ana"))
    await ws.with_thread("first").write("/code/app.py", "print('first')\n")
    for n in range(1500):
        assert await ws.with_thread(f"t{n}").read_text("/code/app.py") == "print('base')\n"
        assert layered.open_layers <= 256
    # the first thread's layer was closed long ago; its change is on disk and read again
    assert await ws.with_thread("first").read_text("/code/app.py") == "print('first')\n"
    assert [c.path for c in await ws.with_thread("first").overlay("/code").changes()] == [
        "/code/app.py"
    ]


async def test_tenants_named_by_a_program_are_bounded_too() -> None:
    layered = ThreadLayers(MemoryStore(), MemoryStore(), open_layers=8)
    for n in range(200):
        layered.overlay(f"t{n}", tenant=f"tenant-{n}")
        assert layered.open_layers <= 8
    # the most recently used stays open and is the same object
    assert layered.overlay("t199", tenant="tenant-199") is layered.overlay(
        "t199", tenant="tenant-199"
    )


async def test_a_closed_layer_still_sees_a_base_change_made_after_its_read(tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "docs").mkdir(parents=True)
    (base / "docs" / "a.md").write_text("alpha\n")
    (tmp_path / "layers").mkdir()
    layered = ThreadLayers(LocalStore(base), LocalStore(tmp_path / "layers"), open_layers=2)
    key = LayerKey("alpha", "work")
    layered.layer_of = lambda: key
    await layered.read_file(P("/docs/a.md"))  # read at the base's first version
    for n in range(5):  # other threads close the layer while its read is in memory
        layered.layer_of = lambda n=n: LayerKey("alpha", f"other{n}")  # type: ignore[misc]
        await layered.stat(P("/docs/a.md"))
    layered.layer_of = lambda: key
    (base / "docs" / "a.md").write_text("someone else\n")
    await layered.write(P("/docs/a.md"), b"mine\n")
    report = await layered.overlay("work", tenant="alpha").apply()
    assert report.conflicts == ["/docs/a.md"]
    assert (base / "docs" / "a.md").read_text() == "someone else\n"


def test_escaped_names_never_meet_even_without_case() -> None:
    """Names that escape to look-alikes (a hashed long name, its plain prefix, ``%`` spelt out,
    upper and lower case, a name ending in what a hash suffix looks like) stay apart."""
    base = "a" * 120
    names = [
        base,
        base + "b",
        base + "c",
        base + "-" + "0" * 16,
        "A",
        "a",
        "%41",
        "%2541",
        "ß",
        "SS",
        "ss",
        "\u0130",
        "i\u0307",
        "t1",
        "T1",
        "t1 ",
        "t1\x00",
        "",
        ".",
        "..",
        "x" * 5000,
        "x" * 4999 + "y",
    ]
    folders = [str(layer_folder(thread, tenant)) for thread in names for tenant in ("t", "T")]
    assert len({f.casefold() for f in folders}) == len(folders)
    assert all(len(part) <= 140 for f in folders for part in f.split("/"))
