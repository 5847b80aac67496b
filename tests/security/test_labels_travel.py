"""A file's labels travel with it: a backup, a copy and a move are as hard to read as the
original, whatever the target mount's labels, and a deleted or moved file leaves no sidecar
behind to label whatever is written there next."""

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
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

ADMIN = Principal.of("admin", tenant="acme", roles={"hr"}, clearance="restricted")
READER = Principal.of("reader", tenant="acme", clearance="internal")


@pytest.fixture
def ws() -> SyncWorkspace:
    ws = Workspace(
        [
            Mount.of("/vault", MemoryStore(), labels=Labels(classification="confidential")),
            Mount.of("/docs", MemoryStore(), labels=Labels(classification="public")),
            Mount.of("/other", MemoryStore(), labels=Labels(tenant="umbrella")),
        ],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=ADMIN,
    ).sync()
    ws.write("/docs/plan.txt", "zebra launch plan\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    ws.write("/docs/pay.md", "---\nclassification: confidential\n---\nzebra salary\n")
    ws.write("/docs/open.md", "zebra canteen\n")
    ws.write("/vault/secret.txt", "zebra vault\n")
    return ws


def _reader(ws: SyncWorkspace) -> SyncWorkspace:
    return ws.aio.with_principal(READER).sync()


def _hidden(ws: SyncWorkspace, path: str) -> None:
    reader = _reader(ws)
    with pytest.raises(NotFoundError):
        reader.read_text(path)
    assert path not in {str(e.path) for e in reader.list("/", recursive=True)}
    assert path not in {m.path for m in reader.grep("zebra", "/").matches}
    assert path not in {h.path for h in reader.search("zebra", mode="bm25", k=50).hits}


def test_a_backup_keeps_the_labels_of_the_original(ws: SyncWorkspace) -> None:
    ws.write("/docs/plan.txt", "zebra plan two\n", backup=True)
    assert ws.read_text("/docs/plan.txt.bak") == "zebra launch plan\n"
    ws.reindex()
    _hidden(ws, "/docs/plan.txt.bak")
    assert ws.stat("/docs/plan.txt.bak").labels.roles == frozenset({"hr"})


def test_a_backup_of_an_unlabelled_file_adds_no_sidecar(ws: SyncWorkspace) -> None:
    ws.write("/docs/open.md", "zebra canteen two\n", backup=True)
    assert not ws.exists("/docs/open.md.bak.labels.yaml")
    assert _reader(ws).read_text("/docs/open.md.bak") == "zebra canteen\n"


@pytest.mark.parametrize("verb", ["move", "copy"])
@pytest.mark.parametrize("target", ["/docs/moved/plan.txt", "/vault/plan.txt"])
def test_a_moved_or_copied_file_keeps_its_sidecar_labels(
    ws: SyncWorkspace, verb: str, target: str
) -> None:
    getattr(ws, verb)("/docs/plan.txt", target)
    _hidden(ws, target)
    labels = ws.stat(target).labels
    assert "hr" in labels.roles
    if verb == "move":
        assert not ws.exists("/docs/plan.txt.labels.yaml")  # no sidecar left behind


@pytest.mark.parametrize("verb", ["move", "copy"])
def test_mount_labels_travel_to_a_looser_mount(ws: SyncWorkspace, verb: str) -> None:
    getattr(ws, verb)("/vault/secret.txt", "/docs/secret.txt")
    _hidden(ws, "/docs/secret.txt")
    assert ws.stat("/docs/secret.txt").labels.classification == "confidential"
    # and the sidecar that holds them is hidden as the file is
    _hidden(ws, "/docs/secret.txt.labels.yaml")


def test_a_folder_copy_keeps_every_file_s_labels(ws: SyncWorkspace) -> None:
    ws.copy("/docs", "/vault/copy")
    ws.copy("/vault", "/docs/back")
    for path in ("/docs/back/copy/plan.txt", "/docs/back/copy/pay.md", "/docs/back/secret.txt"):
        _hidden(ws, path)
    # a file copied into the confidential vault is confidential there, and stays so
    _hidden(ws, "/docs/back/copy/open.md")
    # a public file copied within its public mount stays as readable as it was
    ws.copy("/docs/open.md", "/docs/again/open.md")
    assert _reader(ws).read_text("/docs/again/open.md") == "zebra canteen\n"
    assert not ws.exists("/docs/again/open.md.labels.yaml")


def test_a_folder_move_within_a_mount_takes_the_sidecars_along(ws: SyncWorkspace) -> None:
    ws.mkdir("/docs/team")
    ws.move("/docs/plan.txt", "/docs/team/plan.txt")
    ws.move("/docs/team", "/docs/renamed")
    _hidden(ws, "/docs/renamed/plan.txt")
    assert ws.exists("/docs/renamed/plan.txt.labels.yaml")


def test_a_deleted_file_takes_its_sidecar_with_it(ws: SyncWorkspace) -> None:
    ws.delete("/docs/plan.txt")
    assert not ws.exists("/docs/plan.txt.labels.yaml")
    ws.write("/docs/plan.txt", "a new public plan\n")
    assert _reader(ws).read_text("/docs/plan.txt") == "a new public plan\n"


def test_labels_of_two_tenants_never_merge() -> None:
    from bastion.core.principal import Classifications
    from bastion.labels.sidecars import joined

    with pytest.raises(LabelError, match="tenant"):
        joined(Labels(tenant="acme"), Labels(tenant="umbrella"), Classifications())
    merged = joined(
        Labels(classification="internal", roles=frozenset({"hr", "ops"})),
        Labels(tenant="acme", classification="confidential", roles=frozenset({"ops"})),
        Classifications(),
    )
    assert merged == Labels("acme", "confidential", frozenset({"ops"}))


def test_an_append_that_would_break_the_labels_is_refused(ws: SyncWorkspace) -> None:
    ws.write("/docs/open.md", "---\ntags: [a]\n")  # never closed: no front matter yet
    with pytest.raises(LabelError):
        ws.append("/docs/open.md", "roles: [unclosed\n---\nbody\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    with pytest.raises(LabelError):
        ws.append("/docs/plan.txt.labels.yaml", "classification: [\n")
    assert ws.read_text("/docs/plan.txt.labels.yaml") == "roles: [hr]\n"
    ws.append("/docs/plan.txt", "more of the plan\n")  # appending below the labels is fine
    assert ws.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})


def test_text_that_utf8_cannot_store_is_refused_in_one_line(ws: SyncWorkspace) -> None:
    from bastion import OperationError

    with pytest.raises(OperationError, match="lone surrogate") as err:
        ws.write("/docs/bad.txt", "abc\ud800def")
    assert "\n" not in str(err.value)
    assert not ws.exists("/docs/bad.txt")
