"""Overlay layers are kept per tenant and thread: a principal of one tenant that names another
tenant's thread id (or works outside any thread) reaches its own tenant's layer of that name,
never the other's. It sees the base only, its writes never appear in the other's review or
apply, and review, diff, apply and discard answer as for a thread with no layer. Hostile
tenant names and thread ids (``..``, ``/``, NUL, very long, look-alike letters, case) stay one
folder name each, apart from each other and from the base. Through real stores (a local
folder, SQLite, memory) and the Python edge; ``tests/server/test_api_overlay_tenancy.py``
holds the HTTP edge (decision 0104)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import NotFoundError, Policy, Principal, Workspace
from bastion.config import MountConfig
from bastion.core.overlay_port import overlay_below
from bastion.core.paths import VPath
from bastion.stores.overlay_layers import ThreadLayers, layer_folder

P = VPath.parse
A = Principal.of("ana", tenant="alpha")
B = Principal.of("bob", tenant="beta")
STORES = {
    "folder": ("file:project", "file:layers"),
    "sqlite": ("sqlite:base.db", "sqlite:layers.db"),
    "memory": ("memory://", "memory://"),
}


async def _workspace(tmp_path: Path, kind: str) -> tuple[Workspace, ThreadLayers]:
    base_url, layer_url = STORES[kind]
    (tmp_path / "project").mkdir()
    mount = MountConfig("/code", base_url, overlay=layer_url).open(tmp_path)
    layered = overlay_below(mount.store)
    assert isinstance(layered, ThreadLayers)
    await layered.base.write(P("/old.md"), b"old base\n")
    await layered.base.write(P("/app.py"), b"print('base')\n")
    return Workspace([mount], policy=Policy.allow_all(), principal=A), layered


async def _all_files(store: ThreadLayers) -> dict[str, bytes]:
    found = {}
    async for entry in store.layers.walk(P("/")):
        if not entry.is_dir:
            found[str(entry.path)] = await store.layers.read_all(entry.path)
    return found


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_another_tenant_naming_the_thread_sees_the_base_and_plants_nothing(
    tmp_path: Path, kind: str
) -> None:
    ws, layered = await _workspace(tmp_path, kind)
    alpha = ws.with_thread("t1")
    await alpha.write("/code/app.py", "print('alpha secret')\n")
    await alpha.write("/code/plans/q3.md", "alpha plan\n")
    await alpha.delete("/code/old.md")
    beta = ws.with_principal(B).with_thread("t1")
    assert await beta.read_text("/code/app.py") == "print('base')\n"
    assert await beta.read_text("/code/old.md") == "old base\n"  # no whiteout seen
    assert not await beta.exists("/code/plans")  # nor alpha's folders
    assert sorted(e.path.name for e in await beta.list("/code")) == ["app.py", "old.md"]
    review = beta.overlay("/code")
    assert await review.changes() == []
    assert await review.diff() == ""
    with pytest.raises(NotFoundError, match="no change at /code/app"):
        await review.apply(["/code/app.py"])
    with pytest.raises(NotFoundError, match="no change at /code/plans/q3"):
        await review.discard(["/code/plans/q3.md"])
    assert (await review.apply()).applied == ()
    assert (await review.discard()).discarded == ()
    # beta's own writes land in beta's layer, never in alpha's review or apply
    await beta.write("/code/app.py", "print('planted')\n")
    await beta.write("/code/planted.md", "planted\n")
    mine = alpha.overlay("/code")
    assert sorted(c.path for c in await mine.changes()) == [
        "/code/app.py",
        "/code/old.md",
        "/code/plans/q3.md",
    ]
    assert "planted" not in await mine.diff()
    assert await alpha.read_text("/code/app.py") == "print('alpha secret')\n"
    assert not await alpha.exists("/code/planted.md")
    done = await mine.apply()
    assert sorted(done.applied) == ["/code/app.py", "/code/old.md", "/code/plans/q3.md"]
    assert await layered.base.read_all(P("/app.py")) == b"print('alpha secret')\n"
    assert not await layered.base.exists(P("/planted.md"))
    # beta's layer is still its own: its own review shows its two changes
    assert sorted(c.path for c in await beta.overlay("/code").changes()) == [
        "/code/app.py",
        "/code/planted.md",
    ]


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_the_same_thread_id_in_two_tenants_is_two_layers(tmp_path: Path, kind: str) -> None:
    ws, layered = await _workspace(tmp_path, kind)
    await ws.with_thread("t1").write("/code/x.md", "alpha\n")
    await ws.with_principal(B).with_thread("t1").write("/code/x.md", "beta\n")
    await ws.write("/code/outside.md", "alpha, no thread\n")  # the tenant's shared layer
    files = await _all_files(layered)
    assert files["/tenants/n-alpha/threads/t-t1/x.md"] == b"alpha\n"
    assert files["/tenants/n-beta/threads/t-t1/x.md"] == b"beta\n"
    assert files["/tenants/n-alpha/shared/outside.md"] == b"alpha, no thread\n"
    assert not await ws.with_principal(B).exists("/code/outside.md")
    assert await ws.with_principal(B).overlay("/code").changes() == []


async def test_a_person_of_the_same_tenant_reviews_and_applies_an_agents_thread(
    tmp_path: Path,
) -> None:
    """The principal is not in the key: the review names the thread, the guard judges each
    file."""
    ws, layered = await _workspace(tmp_path, "memory")
    agent = ws.with_principal(Principal.of("agent-7", tenant="alpha")).with_thread("job-1")
    await agent.write("/code/app.py", "print('agent')\n")
    review = ws.with_thread("job-1").overlay("/code")
    assert [c.path for c in await review.changes()] == ["/code/app.py"]
    assert (await review.apply()).applied == ("/code/app.py",)
    assert await layered.base.read_all(P("/app.py")) == b"print('agent')\n"


CYRILLIC_A = "\u0430"
HOSTILE = [
    "..",
    ".",
    "/",
    "../alpha",
    "a/../../b",
    "nul\x00byte",
    "x" * 5000,
    CYRILLIC_A + "lpha",  # looks like alpha
    "ALPHA",
    "Alpha",
    "%61lpha",
    "t-t1",
    "n-alpha",
    "threads",
    "\ud800",  # a lone surrogate a Python caller may pass
    "",
    " alpha",
    "alpha\n",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_tenant_or_thread_is_one_folder_name(name: str) -> None:
    for folder in (layer_folder("t1", name), layer_folder(name, "alpha"), layer_folder(name, name)):
        parts = folder.parts
        assert len(parts) == 4 and parts[0] == "tenants" and parts[2] == "threads"
        assert parts[1].startswith("n-") and parts[3].startswith("t-")
        for part in parts:
            assert part.isascii() and part.isprintable() and len(part) <= 140
            assert part == part.strip() and "/" not in part and part not in (".", "..")
    shared = layer_folder(None, name)
    assert shared.parts[0] == "tenants" and shared.parts[2:] == ("shared",)


def test_hostile_names_never_share_a_folder_even_without_case() -> None:
    """Two different names never give one folder, compared as a case-insensitive disk does."""
    names = [*HOSTILE, "alpha", "beta", "x" * 4999 + "y"]
    tenants = {str(layer_folder(None, n)).lower() for n in names}
    threads = {str(layer_folder(n, "alpha")).lower() for n in names}
    assert len(tenants) == len(names) and len(threads) == len(names)
    assert str(layer_folder("t1", "alpha")) not in {str(layer_folder("t1", n)) for n in HOSTILE}


@pytest.mark.parametrize(
    ("tenant", "thread"),
    [
        ("..", "t1"),
        (CYRILLIC_A + "lpha", "t1"),
        ("ALPHA", "t1"),
        ("alpha/../alpha", "t1"),
        ("beta", "../t1"),
    ],
)
async def test_a_hostile_name_reaches_neither_the_layer_nor_the_base(
    tmp_path: Path, tenant: str, thread: str
) -> None:
    ws, _ = await _workspace(tmp_path, "folder")
    alpha = ws.with_thread("t1")
    await alpha.write("/code/app.py", "print('alpha secret')\n")
    other = ws.with_principal(Principal.of("eve", tenant=tenant)).with_thread(thread)
    assert await other.read_text("/code/app.py") == "print('base')\n"
    assert await other.overlay("/code").changes() == []
    await other.write("/code/app.py", "print('eve')\n")
    await other.write("/code/eve.md", "eve\n")
    assert (tmp_path / "project" / "app.py").read_text() == "print('base')\n"
    assert not (tmp_path / "project" / "eve.md").exists()
    assert [c.path for c in await alpha.overlay("/code").changes()] == ["/code/app.py"]
    assert await alpha.read_text("/code/app.py") == "print('alpha secret')\n"
    layers = tmp_path / "layers"
    assert sorted(p.name for p in layers.iterdir()) == ["tenants"]  # nothing beside
    found = sorted(str(p.relative_to(layers)) for p in layers.rglob("eve.md"))
    assert len(found) == 1 and found[0].startswith("tenants/n-") and "n-alpha/" not in found[0]


async def test_a_layer_under_the_old_key_is_read_by_no_principal(tmp_path: Path) -> None:
    """Layers kept before tenants (``threads/t-<thread>``, ``shared``) are left in place and
    read by no workspace view; the store used directly (no principal) still reads them, so an
    operator can review or move them (docs/changes.md)."""
    ws, layered = await _workspace(tmp_path, "folder")
    old = layered.overlay("t1", tenant=None)
    await old.write(P("/app.py"), b"print('old layer')\n")
    await layered.write(P("/app.py"), b"print('old shared')\n")  # no principal's call
    assert (tmp_path / "layers" / "threads" / "t-t1" / "app.py").is_file()
    assert (tmp_path / "layers" / "shared" / "app.py").is_file()
    for view in (ws, ws.with_thread("t1"), ws.with_principal(B).with_thread("t1")):
        assert await view.read_text("/code/app.py") == "print('base')\n"
        assert await view.overlay("/code").changes() == []
    assert await old.read_all(P("/app.py")) == b"print('old layer')\n"
    assert await layered.read_all(P("/app.py")) == b"print('old shared')\n"


async def test_the_search_never_finds_another_tenants_layer() -> None:
    """The index is shared, and a write in a layer is indexed; a hit is checked against the
    searcher's own view, so another tenant finds neither the words nor the new file."""
    from bastion import MemoryStore, Mount
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex

    base = MemoryStore()
    await base.write(P("/notes.md"), b"The base speaks of pelicans.\n")
    mount = Mount.of("/code", ThreadLayers(base, MemoryStore()))
    ws = Workspace(
        [mount], policy=Policy.allow_all(), principal=A, knowledge=Knowledge(MemoryIndex())
    )
    await ws.index_directory("/code")
    alpha = ws.with_thread("t1")
    await alpha.write("/code/notes.md", "The layer speaks of walruses.\n")
    await alpha.write("/code/new.md", "Zebras live in the layer.\n")
    hits = {h.path for h in (await alpha.search("walruses zebras", mode="bm25", k=10)).hits}
    assert hits == {"/code/notes.md", "/code/new.md"}
    for view in (ws.with_principal(B), ws.with_principal(B).with_thread("t1")):
        for word in ("walruses", "zebras"):
            found = await view.search(word, mode="bm25", k=10)
            assert not found.hits, word
        pelicans = await view.search("pelicans", mode="bm25", k=10)
        assert {h.path for h in pelicans.hits} == {"/code/notes.md"}
