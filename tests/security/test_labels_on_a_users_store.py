"""A store written by a user implements the seven primitives and knows nothing of labels; its
documents are governed all the same: labels from front matter and sidecars, a document the
reader may not see is not found, and listings, glob, grep and search do not show it."""

from __future__ import annotations

import builtins

import pytest

from bastion import (
    AlreadyExistsError,
    LabelError,
    Labels,
    Mount,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.core.errors import (
    ConflictError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

ADMIN = Principal.of("admin", roles={"hr"}, clearance="restricted")
READER = Principal.of("reader", clearance="internal")


class DictStore(Store):
    """Files in a dict, folders in a set: the primitives and nothing else."""

    kind = "dict"
    timeout = None

    def __init__(self) -> None:
        self.files: dict[VPath, bytes] = {}
        self.folders: set[VPath] = {VPath.ROOT}

    def _info(self, path: VPath) -> FileInfo:
        if path in self.folders:
            return FileInfo(path, EntryKind.DIRECTORY, 0)
        if path in self.files:
            data = self.files[path]
            return FileInfo(path, EntryKind.FILE, len(data), version=str(hash(data)))
        raise NotFoundError(f"{path} not found")

    async def stat(self, path: VPath) -> FileInfo:
        return self._info(path)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        if self._info(path).is_dir:
            raise IsADirectoryError_(f"{path} is a directory")
        data = self.files[path]
        return data[offset:] if length is None else data[offset : offset + length]

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        if path.parent not in self.folders:
            raise NotFoundError(f"{path.parent} not found")
        if path in self.folders:
            raise IsADirectoryError_(f"{path} is a directory")
        if mode is WriteMode.CREATE and path in self.files:
            raise AlreadyExistsError(f"{path} already exists")
        if if_version is not None and self._info(path).version != if_version:
            raise ConflictError(f"{path} changed since version {if_version}")
        old = self.files.get(path, b"") if mode is WriteMode.APPEND else b""
        self.files[path] = old + data
        return self._info(path)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        self._info(path)
        below = [p for p in [*self.files, *self.folders] if p != path and p.is_relative_to(path)]
        if below and not recursive:
            raise DirectoryNotEmptyError(f"{path} is not empty")
        for p in below:
            self.files.pop(p, None)
            self.folders.discard(p)
        self.files.pop(path, None)
        self.folders.discard(path)

    async def list(self, path: VPath) -> builtins.list[FileInfo]:
        if not self._info(path).is_dir:
            raise NotADirectoryError_(f"{path} is a file")
        names = [*self.files, *self.folders]
        return [self._info(p) for p in names if not p.is_root and p.parent == path]

    async def mkdir(self, path: VPath) -> None:
        if path in self.files or path in self.folders:
            raise AlreadyExistsError(f"{path} already exists")
        if path.parent not in self.folders:
            raise NotFoundError(f"{path.parent} not found")
        self.folders.add(path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        if dst in self.files or dst in self.folders:
            raise AlreadyExistsError(f"{dst} already exists")
        self._info(src)
        self.files[dst] = self.files.pop(src)


def test_the_store_port_carries_no_label_hook() -> None:
    """Primitives, what is derived from them, and what a store may declare of itself: nothing
    a store must carry for document labels (those are the label port's, ``core.label_port``)."""
    port = {name for name in vars(Store) if not name.startswith("_")}
    assert port == {
        *("stat", "read_range", "write", "delete", "list", "mkdir", "rename"),
        *("exists", "read_all", "read_file", "makedirs", "walk", "copy_file", "describe"),
        "begin_write",  # the prelude every write shares (mode, the root refused)
        *("kind", "timeout", "keeps_labels", "bounds_own_waits", "change_mark", "odd_names"),
        *("ephemeral", "gated_commits", "list_sought"),
    }


def test_the_users_store_implements_the_primitives_alone() -> None:
    own = {name for name in vars(DictStore) if not name.startswith("_")}
    assert own == {
        "kind",
        "timeout",
        "stat",
        "read_range",
        "write",
        "delete",
        "list",
        "mkdir",
        "rename",
    }


@pytest.fixture
def ws() -> SyncWorkspace:
    ws = Workspace(
        [Mount.of("/docs", DictStore(), labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=ADMIN,
    ).sync()
    ws.write("/docs/open.md", "# Open\n\nThe canteen opens at nine.\n")
    ws.write("/docs/pay.md", "---\nclassification: confidential\n---\n# Pay\n\nzebra salary\n")
    ws.write("/docs/plan.txt", "zebra launch plan\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    ws.mkdir("/docs/hr")
    ws.write("/docs/hr/only.md", "---\nroles: [hr]\n---\nzebra review\n")
    return ws


def _as(ws: SyncWorkspace, who: Principal) -> SyncWorkspace:
    return ws.aio.with_principal(who).sync()


def test_labels_come_from_front_matter_and_sidecars(ws: SyncWorkspace) -> None:
    assert ws.stat("/docs/open.md").labels == Labels(classification="internal")
    assert ws.stat("/docs/pay.md").labels == Labels(classification="confidential")
    assert ws.stat("/docs/plan.txt").labels == Labels(
        classification="internal", roles=frozenset({"hr"})
    )
    assert ws.stat("/docs/plan.txt.labels.yaml").labels == ws.stat("/docs/plan.txt").labels


@pytest.mark.parametrize(
    "path", ["/docs/pay.md", "/docs/plan.txt", "/docs/plan.txt.labels.yaml", "/docs/hr/only.md"]
)
def test_hidden_documents_are_not_found(ws: SyncWorkspace, path: str) -> None:
    reader = _as(ws, READER)
    for call in (reader.read_text, reader.stat):
        with pytest.raises(NotFoundError) as err:
            call(path)
        assert "zebra" not in str(err.value)


def test_listing_glob_grep_and_search_do_not_show_them(ws: SyncWorkspace) -> None:
    reader = _as(ws, READER)
    assert [str(e.path) for e in reader.list("/docs")] == ["/docs/open.md"]  # hr/ not shown
    assert [str(e.path) for e in reader.glob("/docs/**")] == ["/docs/open.md"]
    assert not reader.grep("zebra", "/docs").matches
    assert not reader.search("zebra", mode="bm25").hits
    assert {h.path for h in ws.search("zebra", mode="bm25").hits} == {
        "/docs/pay.md",
        "/docs/plan.txt",
        "/docs/hr/only.md",
    }


def test_sidecar_changes_are_decided_as_relabellings(ws: SyncWorkspace) -> None:
    editor = Principal.of("editor", clearance="restricted")
    may_not_label = Policy(rules=(Rule.allow(["read", "list", "write", "delete"], "/**"),))
    limited = Workspace(ws.aio.mounts, policy=may_not_label, principal=editor).sync()
    limited.write("/docs/open.md.labels.yaml", "classification: confidential\n")  # tightens
    assert ws.stat("/docs/open.md").labels == Labels(classification="confidential")
    with pytest.raises(PolicyDeniedError, match="label permission"):
        limited.delete("/docs/open.md.labels.yaml")  # would loosen
    with pytest.raises(LabelError, match="labels could not be read"):
        ws.write("/docs/open.md.labels.yaml", "roles: 42\n")
    reader = _as(ws, READER)
    # the sidecar of a file the reader may not see: refused as the file's own name would be
    with pytest.raises(PolicyDeniedError, match="is not allowed by policy"):
        reader.write("/docs/pay.md.labels.yaml", "classification: public\n")
    assert ws.stat("/docs/pay.md").labels == Labels(classification="confidential")
