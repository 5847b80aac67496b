"""A file's own labels (Markdown front matter, a ``<name>.labels.yaml`` sidecar) hold on every
read path, not only in search: read, stat, list, glob, grep, search, copy."""

from __future__ import annotations

import pytest

from bastion import (
    LabelError,
    Labels,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    SyncWorkspace,
    Workspace,
)
from bastion.core.paths import VPath
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.workspace import sync

ADMIN = Principal.of("admin", roles={"hr"}, clearance="restricted")
READER = Principal.of("reader", clearance="internal")


@pytest.fixture
def ws() -> SyncWorkspace:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=ADMIN,
    ).sync()
    ws.write("/docs/open.md", "# Open\n\nThe canteen opens at nine.\n")
    ws.write("/docs/pay.md", "---\nclassification: confidential\n---\n# Pay\n\nzebra salary\n")
    ws.write("/docs/plan.txt", "zebra launch plan\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    return ws


def _raw(ws: SyncWorkspace) -> MemoryStore:
    """The mount's own store, under the document-labels wrapper (files put there arrive
    the way files on a disk or in a bucket do: without passing through the workspace)."""
    store = ws.aio.mounts[0].store
    while not isinstance(store, MemoryStore):
        store = store.inner
    return store


def _as(ws: SyncWorkspace, who: Principal) -> SyncWorkspace:
    return ws.aio.with_principal(who).sync()


@pytest.mark.parametrize("path", ["/docs/pay.md", "/docs/plan.txt", "/docs/plan.txt.labels.yaml"])
def test_labelled_files_are_not_found_by_direct_calls(ws: SyncWorkspace, path: str) -> None:
    reader = _as(ws, READER)
    for call in (reader.read_text, reader.stat):
        with pytest.raises(NotFoundError) as err:
            call(path)
        assert "zebra" not in str(err.value)
    with pytest.raises(NotFoundError):
        reader.copy(path, "/docs/copy.txt")


def test_listings_grep_and_search_show_only_what_the_reader_may_see(ws: SyncWorkspace) -> None:
    reader = _as(ws, READER)
    assert [str(e.path) for e in reader.list("/docs")] == ["/docs/open.md"]
    assert [str(e.path) for e in reader.glob("/docs/**")] == ["/docs/open.md"]
    assert not reader.grep("zebra", "/docs").matches
    assert not reader.search("zebra", mode="bm25").hits
    admin = _as(ws, ADMIN)
    assert {h.path for h in admin.search("zebra", mode="bm25").hits} == {
        "/docs/pay.md",
        "/docs/plan.txt",
    }


def test_a_sidecar_change_relabels_the_indexed_file(ws: SyncWorkspace) -> None:
    reader = _as(ws, READER)
    ws.write("/docs/open.md.labels.yaml", "classification: restricted\n")
    assert not reader.search("canteen", mode="bm25").hits
    with pytest.raises(NotFoundError):
        reader.read_text("/docs/open.md")
    hit = ws.search("canteen", mode="bm25").hits[0]
    assert hit.labels.classification == "restricted"
    ws.delete("/docs/open.md.labels.yaml")
    assert [h.path for h in reader.search("canteen", mode="bm25").hits] == ["/docs/open.md"]
    assert "canteen" in reader.read_text("/docs/open.md")


def test_labels_only_tighten_and_broken_ones_fail_closed(ws: SyncWorkspace) -> None:
    reader = _as(ws, READER)
    ws.write("/docs/loose.md", "---\nclassification: public\n---\nloosened text\n")
    assert ws.stat("/docs/loose.md").labels.classification == "internal"  # not lowered
    ws.write("/docs/odd.txt", "odd text\n")
    with pytest.raises(LabelError, match="must be a YAML mapping"):
        ws.write("/docs/odd.txt.labels.yaml", "- not\n- a mapping\n")
    assert not ws.exists("/docs/odd.txt.labels.yaml")  # refused whole: nothing written
    # Broken metadata that reaches the store some other way hides the file from everybody.
    store = _raw(ws)
    sync.run_blocking(store.write(VPath.parse("/odd.txt.labels.yaml"), b"- not\n- a mapping\n"))
    for who in (reader, ws):
        with pytest.raises(NotFoundError):
            who.read_text("/docs/odd.txt")
    kept = ws.aio._shared.audit.records  # the sink itself: views answer what was told
    assert any("labels cannot be determined" in r.reason for r in kept)


def test_broken_metadata_fails_closed_and_empty_metadata_is_no_metadata(ws: SyncWorkspace) -> None:
    reader = _as(ws, READER)
    with pytest.raises(LabelError, match="not valid YAML"):
        ws.write("/docs/bad.md", "---\ntitle: [unclosed\n---\nbroken front matter\n")
    store = _raw(ws)
    sync.run_blocking(
        store.write(VPath.parse("/bad.md"), b"---\ntitle: [unclosed\n---\nbroken front matter\n")
    )
    ws.write("/docs/empty.md", "---\n---\nan empty block\n")
    ws.write("/docs/note.txt", "a note\n")
    ws.write("/docs/note.txt.labels.yaml", "")
    for who in (reader, ws):
        with pytest.raises(NotFoundError):
            who.read_text("/docs/bad.md")
        assert "bad.md" not in [i.path.name for i in who.list("/docs")]
    assert reader.read_text("/docs/empty.md").endswith("an empty block\n")
    assert reader.read_text("/docs/note.txt") == "a note\n"


def test_a_sidecar_beside_a_symbolic_link_does_not_break_the_folder(tmp_path) -> None:
    """The described "file" is a link (never followed): the sidecar is an ordinary file then,
    and listing, grep and reads of the folder go on working."""
    from bastion import LocalStore

    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("plain notes\n")
    (root / "x").symlink_to(root / "notes.txt")
    (root / "x.labels.yaml").write_text("classification: internal\n")
    ws = Workspace(
        [Mount.of("/docs", LocalStore(root))],
        policy=Policy.allow_all(),
        principal=ADMIN,
    ).sync()
    names = {str(e.path) for e in ws.list("/docs")}
    assert {"/docs/notes.txt", "/docs/x.labels.yaml"} <= names
    assert ws.grep("plain", "/docs").matches
    assert ws.read_text("/docs/x.labels.yaml") == "classification: internal\n"
