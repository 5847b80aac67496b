"""The store contract through every wrapper a mount's store may sit in, and what each wrapper
must forward.

A workspace never talks to a raw store: it reads through the access guard, document labels, a
time limit and, in scoped agent workspaces, a folder view. Each has the store's interface, so
each keeps the store's contract, and so does the stack the workspace builds of them. Document
labels read labels out of content; that one difference is a flag of the contract
(``reads_labels``) and is checked further here.
"""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import bastion
from bastion import (
    FileLimits,
    MemoryAuditSink,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    Workspace,
)
from bastion.core.errors import LabelError, NotFoundError, PolicyDeniedError
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.label_port import LabelPort, Relabel
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.core.timeouts import TimedStore
from bastion.labels.store import DocumentLabels
from bastion.stores.folder import FolderStore
from bastion.stores.local import LocalStore
from bastion.stores.sqlite import SqliteStore
from bastion.workspace.journal import Journal, JournalledStore, Threads

from .store_contract import StoreContract

P = VPath.parse
MiB = 1 << 20
POLICY = Policy.allow_all(limits=FileLimits(max_file_bytes=64 * MiB))
"""Every action allowed, and a file limit above the contract's largest file (the guard's
limit is policy, not store behaviour)."""
LIMIT = 600.0
"""A time limit no contract call comes near: the wrapper is there, the limit never fires."""
FOLDER = P("/threads/t-1")
WRAPPERS: tuple[type[Store], ...] = (
    GuardedStore,
    DocumentLabels,
    TimedStore,
    FolderStore,
    JournalledStore,
)
DERIVED = frozenset({"exists", "read_all", "makedirs", "walk", "copy_file"})
"""Port methods the base class derives from the primitives alone: a wrapper that inherits one
runs it through its own (forwarded, checked) primitives. Every other port method, each hook
included, must be overridden by every wrapper, or the wrapper answers with the port's default
instead of asking the store it wraps."""


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalStore]:
    store = LocalStore(tmp_path / "root", create=True)
    yield store
    store.close()


def labelled(inner: Store) -> DocumentLabels:
    return DocumentLabels(inner, Labels(), POLICY.classifications)


def journalled(inner: Store) -> JournalledStore:
    """``inner`` with every change recorded in a journal of its own (docs/changes.md)."""
    return JournalledStore(inner, Journal(":memory:"), Threads(), VPath.ROOT, Labels())


def guarded(inner: Store, policy: Policy = POLICY, who: Principal | None = None) -> GuardedStore:
    """``inner`` behind the guard, mounted at ``/`` (store paths are workspace paths)."""
    mount = Mount.of("/", inner)
    ctx = GuardContext(who or Principal.of("tester"), policy, MemoryAuditSink())
    return GuardedStore(mount.store, mount, ctx)


def as_the_workspace_builds_it(
    backing: Store, policy: Policy = POLICY, who: Principal | None = None
) -> GuardedStore:
    """A scoped area's mount as a workspace serves it: the guard over document labels over
    the mount's time limit over the folder view of ``backing``."""
    ws = Workspace(
        [Mount.of("/", FolderStore(backing, FOLDER), timeout=LIMIT)],
        policy=policy,
        principal=who or Principal.of("tester"),
    )
    [mount] = ws.mounts
    stack = GuardedStore(mount.store, mount, GuardContext(ws.principal, ws.policy, ws.audit))
    layers = [type(layer) for layer in _layers(stack)]
    assert layers == [GuardedStore, DocumentLabels, TimedStore, FolderStore, type(backing)]
    return stack


def _layers(store: Store) -> list[Store]:
    found = [store]
    while isinstance(inner := getattr(found[-1], "inner", None), Store):
        found.append(inner)
    return found


# -- the contract, through each wrapper and through the stack ---------------------------------


class TestLabelledMemoryStore(StoreContract):
    reads_labels = True

    @pytest.fixture
    def store(self) -> Store:
        return labelled(MemoryStore())


class TestLabelledLocalStore(StoreContract):
    reads_labels = True

    @pytest.fixture
    def store(self, local: LocalStore) -> Store:
        return labelled(local)


class TestTimedMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return TimedStore(MemoryStore(), LIMIT, "/m")


class TestTimedLocalStore(StoreContract):
    @pytest.fixture
    def store(self, local: LocalStore) -> Store:
        return TimedStore(local, LIMIT, "/m")


class TestGuardedMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return guarded(MemoryStore())


class TestGuardedLocalStore(StoreContract):
    @pytest.fixture
    def store(self, local: LocalStore) -> Store:
        return guarded(local)


class TestJournalledMemoryStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        journal = Journal(tmp_path / "journal.db")
        return JournalledStore(MemoryStore(), journal, Threads(), VPath.ROOT, Labels())


class TestJournalledLocalStore(StoreContract):
    @pytest.fixture
    def store(self, local: LocalStore, tmp_path: Path) -> Store:
        journal = Journal(tmp_path / "journal.db")
        return JournalledStore(local, journal, Threads(), VPath.ROOT, Labels())


class TestFolderOfMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return FolderStore(MemoryStore(), FOLDER)


class TestFolderOfLocalStore(StoreContract):
    @pytest.fixture
    def store(self, local: LocalStore) -> Store:
        return FolderStore(local, FOLDER)


class TestWorkspaceStackOnMemoryStore(StoreContract):
    reads_labels = True

    @pytest.fixture
    def store(self) -> Store:
        return as_the_workspace_builds_it(MemoryStore())


class TestWorkspaceStackOnLocalStore(StoreContract):
    reads_labels = True

    @pytest.fixture
    def store(self, local: LocalStore) -> Store:
        return as_the_workspace_builds_it(local)


class TestWorkspaceStackOnSqliteStore(StoreContract):
    """A store that keeps labels of its own (``keeps_labels``): they are the base."""

    reads_labels = True

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        backing = SqliteStore(tmp_path / "ws.db")
        yield as_the_workspace_builds_it(backing)
        backing.close()


# -- every port method is forwarded ------------------------------------------------------------


def _port_methods() -> frozenset[str]:
    return frozenset(
        name
        for name, value in vars(Store).items()
        if inspect.isfunction(value) and not name.startswith("_")
    )


def test_the_derived_methods_are_port_methods_built_on_the_primitives() -> None:
    assert _port_methods() >= DERIVED
    assert not DERIVED & Store.__abstractmethods__


def _wrapper_classes(source: Path) -> set[str]:
    """Classes in ``source`` that subclass ``Store`` and take a ``Store`` to construct."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        if not any(isinstance(b, ast.Name) and b.id == "Store" for b in node.bases):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                args = [*item.args.args, *item.args.kwonlyargs]
                if any(ast.unparse(a.annotation or ast.Constant("")) == "Store" for a in args):
                    found.add(node.name)
    return found


COMPOSED = {
    "OverlayStore": "two stores, a layer over a base: its own contract run is "
    "tests/contract/test_overlay_store.py; it answers from its layer, not for one inner store",
    "ThreadLayers": "the overlay's layer per thread (tests/stores/test_overlay_layers.py)",
}
"""Stores built of stores that are no wrapper of one: checked by their own contract runs."""


def test_every_wrapper_in_the_package_is_checked() -> None:
    package = Path(bastion.__file__).parent
    found = set().union(*(_wrapper_classes(f) for f in sorted(package.rglob("*.py"))))
    assert found - set(COMPOSED) == {w.__name__ for w in WRAPPERS}


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=lambda w: w.__name__)
def test_every_port_method_is_forwarded(wrapper: type[Store]) -> None:
    missing = sorted(
        name for name in _port_methods() - DERIVED if getattr(wrapper, name) is getattr(Store, name)
    )
    assert not missing, (
        f"{wrapper.__name__} inherits Store.{', Store.'.join(missing)} from the port: forward "
        "each to the wrapped store (a hook left to the port's default answers for the wrapper)"
    )


class Recording(MemoryStore):
    """A memory store that answers its hooks with sentinels and records what reached it."""

    kind = "recording"

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[object, ...]] = []

    def describe(self) -> str:
        return "recording store"

    async def odd_names(self, path: VPath) -> frozenset[str]:
        self.calls.append(("odd_names", path))
        return frozenset({"odd-name"})

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        self.calls.append(("read_file", path, offset, length))
        return await super().read_file(path, offset, length, check=check)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        self.calls.append(("write", path, mode, if_version))
        return await super().write(path, data, mode=mode, if_version=if_version)


STACKS: dict[str, tuple[Callable[[Store], Store], VPath, bool]] = {
    # name: (wrap, where the view's root is on the recording store, reads labels)
    "timed": (lambda s: TimedStore(s, LIMIT, "/m"), VPath.ROOT, False),
    "folder": (lambda s: FolderStore(s, FOLDER), FOLDER, False),
    "guarded": (guarded, VPath.ROOT, False),
    "labelled": (labelled, VPath.ROOT, True),
    "journalled": (journalled, VPath.ROOT, False),
    "workspace stack": (as_the_workspace_builds_it, FOLDER, True),
}


@pytest.mark.parametrize("name", STACKS)
async def test_hooks_and_arguments_reach_the_wrapped_store(name: str) -> None:
    wrap, root, reads_labels = STACKS[name]
    inner = Recording()
    store = wrap(inner)
    assert store.kind == "recording"
    assert store.describe() == "recording store"
    mark = store.change_mark()  # the wrapped store's: every wrapper answers from it alone
    assert mark is not None and mark == inner.change_mark()

    first = await store.write(P("/f.md"), b"one")
    await store.write(P("/f.md"), b"+two", mode=WriteMode.APPEND, if_version=first.version)
    writes = [c for c in inner.calls if c[0] == "write"]
    assert writes[-1] == ("write", root / "f.md", WriteMode.APPEND, first.version)
    assert store.change_mark() != mark

    seen: list[FileInfo] = []
    info, data = await store.read_file(P("/f.md"), 1, 4, check=seen.append)
    assert data == b"ne+t"
    assert [i.path for i in seen] == [P("/f.md")] and seen[0].version == info.version
    assert ("read_file", root / "f.md", 1, 4) in inner.calls  # the store's own one-lookup read

    assert await store.odd_names(VPath.ROOT) == frozenset({"odd-name"})
    assert ("odd_names", root) in inner.calls

    # the label port is the document labels' alone: no wrapper forwards it, no store has it
    ports = [layer for layer in _layers(store) if isinstance(layer, LabelPort)]
    assert len(ports) == (1 if reads_labels else 0)
    for port in ports:
        change = await port.relabelling(P("/f.md.labels.yaml"), b"tags: [x]\n")
        assert change == Relabel(P("/f.md"), Labels(), Labels(tags=frozenset({"x"})), True)
        would_be = await port.prospective(P("/g.md"), b"---\ntags: [y]\n---\n")
        assert would_be == Labels(tags=frozenset({"y"}))


# -- what reading labels changes ---------------------------------------------------------------

FRONT = b"---\nclassification: confidential\ntags: [plan]\n---\n# Plan\n"


@pytest.mark.parametrize("name", ["labelled", "workspace stack"])
async def test_labels_come_from_front_matter_and_the_sidecar(name: str) -> None:
    cleared = Principal.of("tester", clearance="restricted")
    store: Store = (
        labelled(MemoryStore())
        if name == "labelled"
        else as_the_workspace_builds_it(MemoryStore(), who=cleared)
    )
    await store.write(P("/plan.md"), FRONT)
    await store.write(P("/plain.txt"), b"no labels here")
    labels = (await store.stat(P("/plan.md"))).labels
    assert labels == Labels(classification="confidential", tags=frozenset({"plan"}))
    assert (await store.stat(P("/plain.txt"))).labels == Labels()

    # a sidecar tightens its file, and is seen with its file's labels
    written = await store.write(P("/plain.txt.labels.yaml"), b"classification: restricted\n")
    assert written.labels is None  # a write there never echoes the file's labels
    restricted = Labels(classification="restricted")
    assert (await store.stat(P("/plain.txt"))).labels == restricted
    listed = {str(i.path): i.labels for i in await store.list(VPath.ROOT)}
    assert listed == {
        "/plan.md": labels,
        "/plain.txt": restricted,
        "/plain.txt.labels.yaml": restricted,
    }
    checked: list[Labels | None] = []
    await store.read_file(P("/plain.txt"), check=lambda i: checked.append(i.labels))
    assert checked == [restricted]  # the check sees the labels before any byte

    # no file beside it: an ordinary file, with the mount's labels
    await store.write(P("/gone.txt.labels.yaml"), b"classification: restricted\n")
    assert (await store.stat(P("/gone.txt.labels.yaml"))).labels == Labels()


async def test_a_store_that_does_not_read_labels_keeps_sidecars_as_bytes() -> None:
    store = guarded(MemoryStore())
    await store.write(P("/a.txt"), b"a")
    await store.write(P("/a.txt.labels.yaml"), b"roles: 42\n")
    assert await store.read_all(P("/a.txt.labels.yaml")) == b"roles: 42\n"
    assert (await store.stat(P("/a.txt"))).labels is None
    await store.delete(P("/a.txt.labels.yaml"))  # an ordinary file: no relabelling to decide


async def test_document_labels_refuse_what_they_could_not_read_back() -> None:
    inner = MemoryStore()
    store = labelled(inner)
    await store.write(P("/a.md"), b"kept")
    for path, data in [
        ("/a.md", b"---\nclassification: [a, b]\n---\n"),
        ("/a.md.labels.yaml", b"\xff\xfe\x00not text"),
        ("/b.md.labels.yaml", b"tenant: 7\n"),  # refused even before b.md exists
    ]:
        with pytest.raises(LabelError, match="labels could not be read") as caught:
            await store.write(P(path), data)
        assert path in str(caught.value) and "\n" not in str(caught.value)
    assert await inner.read_all(P("/a.md")) == b"kept"
    assert [str(i.path) for i in await inner.list(VPath.ROOT)] == ["/a.md"]


async def test_a_sidecar_change_through_the_stack_is_a_relabelling() -> None:
    may_not_label = Policy(
        rules=(Rule.allow(["read", "list", "write", "delete"], "/**"),),
        limits=FileLimits(max_file_bytes=64 * MiB),
    )
    backing = MemoryStore()
    editor = Principal.of("editor", clearance="restricted")
    store = as_the_workspace_builds_it(backing, may_not_label, editor)
    await store.write(P("/a.txt"), b"a")
    tighter = b"classification: internal\n"
    await store.write(P("/a.txt.labels.yaml"), tighter)  # tightening needs no permission
    assert (await store.stat(P("/a.txt"))).labels == Labels(classification="internal")
    for loosen in (
        lambda: store.write(P("/a.txt.labels.yaml"), b"tags: []\n"),
        lambda: store.delete(P("/a.txt.labels.yaml")),
        lambda: store.rename(P("/a.txt.labels.yaml"), P("/elsewhere.yaml")),
    ):
        with pytest.raises(PolicyDeniedError, match="label permission"):
            await loosen()
    assert await backing.read_all(FOLDER / "a.txt.labels.yaml") == tighter
    with pytest.raises(LabelError, match="labels could not be read"):
        await store.write(P("/a.txt.labels.yaml"), b"roles: 42\n")
    # with the label permission, the same change may loosen
    relabeller = as_the_workspace_builds_it(backing, who=editor)
    await relabeller.delete(P("/a.txt.labels.yaml"))
    assert (await relabeller.stat(P("/a.txt"))).labels == Labels()


# -- hooks through the guard and the folder view ----------------------------------------------

HIDING = Policy(
    rules=(
        Rule.deny(["read", "list"], "/secret", "/secret/**", "/pub/hidden-*"),
        Rule.allow("*", "/**"),
    )
)


def _odd_layout(base: Path) -> None:
    """Folders with links in them (names ``list`` leaves out), made on disk under ``base``."""
    for folder in ("pub", "secret"):
        (base / folder).mkdir(parents=True)
    for name in ("pub/link", "pub/hidden-link", "secret/link"):
        os.symlink(base / "nowhere", base / name)


@pytest.mark.parametrize("name", ["guarded", "workspace stack"])
async def test_odd_names_through_the_guard_show_only_what_may_be_seen(
    tmp_path: Path, local: LocalStore, name: str
) -> None:
    store = (
        guarded(local, HIDING) if name == "guarded" else as_the_workspace_builds_it(local, HIDING)
    )
    _odd_layout(tmp_path / "root" if name == "guarded" else tmp_path / "root" / "threads" / "t-1")
    assert await store.odd_names(P("/pub")) == frozenset({"link"})
    with pytest.raises(NotFoundError, match=r"^/secret not found$"):
        await store.odd_names(P("/secret"))
    with pytest.raises(NotFoundError, match=r"^/nope not found$"):
        await store.odd_names(P("/nope"))


async def test_odd_names_of_a_folder_view(tmp_path: Path, local: LocalStore) -> None:
    view = FolderStore(local, FOLDER)
    assert await view.odd_names(VPath.ROOT) == frozenset()  # the folder is not there yet
    _odd_layout(tmp_path / "root" / "threads" / "t-1")
    assert await view.odd_names(P("/pub")) == frozenset({"link", "hidden-link"})
    with pytest.raises(NotFoundError) as caught:
        await view.odd_names(P("/nope"))
    assert "threads" not in str(caught.value)  # the view's paths, never the backing store's


async def test_a_sidecar_change_of_a_file_the_writer_may_not_see_tells_nothing() -> None:
    backing = MemoryStore()
    owner = as_the_workspace_builds_it(backing)
    await owner.makedirs(P("/secret"))
    for path, data in [("/a.md", b"a"), ("/secret/b.md", b"b"), ("/c.md", FRONT)]:
        await owner.write(P(path), data)
    writer = as_the_workspace_builds_it(backing, HIDING)
    change = b"tags: [x]\n"
    await writer.write(P("/a.md.labels.yaml"), change)  # a file it sees: relabelled
    assert (await writer.stat(P("/a.md"))).labels == Labels(tags=frozenset({"x"}))
    # labels hide c.md: refused as a write of c.md itself would be (a hidden name)
    with pytest.raises(PolicyDeniedError, match=r"^write on /c.md.labels.yaml is not allowed"):
        await writer.write(P("/c.md.labels.yaml"), change)
    with pytest.raises(PolicyDeniedError, match="labels sidecar"):  # policy: a blind write
        await writer.write(P("/secret/b.md.labels.yaml"), change)
    assert not await backing.exists(FOLDER / "c.md.labels.yaml")
    assert not await backing.exists(FOLDER / "secret" / "b.md.labels.yaml")

    drop_box = Mount.of("/", labelled(backing), "write_only")
    blind = GuardedStore(
        drop_box.store, drop_box, GuardContext(Principal.of("w"), POLICY, MemoryAuditSink())
    )
    with pytest.raises(PolicyDeniedError, match="labels sidecar"):
        await blind.write(P("/a.md.labels.yaml"), change)


async def test_prospective_labels_take_the_sidecar_beside_and_the_head() -> None:
    backing = MemoryStore()
    port = labelled(backing)
    await port.write(P("/c.md"), FRONT)
    await port.write(P("/new.md.labels.yaml"), b"tags: [beside]\n")  # a sidecar of no file yet
    data = b"---\ntags: [mine]\n---\n"
    assert await port.prospective(P("/new.md"), data) == Labels(tags=frozenset({"beside", "mine"}))
    assert await port.prospective(P("/c.md"), data) == Labels(tags=frozenset({"mine"}))
