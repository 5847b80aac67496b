"""The change journal is governed like everything else: a change list, a diff or an undo shows
and touches only what the viewer may read (and write); restoring a labelled file restores it
as hard to read as it was; every review action is audited. Each runs against both journals:
a SQLite file and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import (
    AccessDeniedError,
    Labels,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.core.models import Action
from bastion.workspace.journal import Journal, PgJournal

ADMIN = Principal.of("admin", tenant="acme", roles={"hr"}, clearance="restricted")
READER = Principal.of("reader", tenant="acme", clearance="internal")


@pytest.fixture(params=["sqlite", "postgresql"])
def journal_at(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Journal]]:
    """Opens the test's journal (each call: as another process would)."""
    pg = request.param == "postgresql"
    where = str(request.getfixturevalue("pg_dsn")) if pg else str(tmp_path / "journal.db")
    opened: list[Journal] = []

    def open_() -> Journal:
        opened.append(PgJournal(where) if pg else Journal(where))
        return opened[-1]

    yield open_
    for journal in opened:
        journal.close()


@pytest.fixture
def ws(journal_at: Callable[[], Journal]) -> SyncWorkspace:
    ws = Workspace(
        [
            Mount.of("/vault", MemoryStore(), labels=Labels(classification="confidential")),
            Mount.of("/docs", MemoryStore(), labels=Labels(classification="public")),
            Mount.of("/ro", MemoryStore(), scope="read_only"),
        ],
        policy=Policy.allow_all(),
        principal=ADMIN,
        journal=journal_at(),
    ).sync()
    ws.write("/docs/plan.txt", "zebra launch plan\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")
    ws.write("/docs/pay.md", "---\nclassification: confidential\n---\nzebra salary\n")
    ws.write("/docs/open.md", "zebra canteen\n")
    ws.write("/vault/secret.txt", "zebra vault\n")
    return ws


def _reader(ws: SyncWorkspace) -> SyncWorkspace:
    return ws.with_principal(READER)


def _seen(view: SyncWorkspace) -> set[str]:
    return {e.path for c in view.changes() for e in c.entries}


def test_a_change_list_shows_only_what_the_viewer_may_read(ws: SyncWorkspace) -> None:
    reader = _reader(ws)
    assert _seen(reader) == {"/docs/open.md"}
    assert _seen(ws) >= {"/docs/plan.txt", "/docs/pay.md", "/vault/secret.txt"}


@pytest.mark.parametrize("path", ["/vault/secret.txt", "/docs/plan.txt", "/docs/pay.md"])
def test_a_hidden_change_is_not_found_for_diff_or_undo(ws: SyncWorkspace, path: str) -> None:
    ws.write(
        path,
        "zebra changed\n"
        if not path.endswith(".md")
        else "---\nclassification: confidential\n---\nzebra changed\n",
    )
    change = ws.changes()[-1]
    reader = _reader(ws)
    with pytest.raises(NotFoundError) as diff_error:
        reader.diff(change.id)
    with pytest.raises(NotFoundError) as undo_error:
        reader.undo(change.id)
    for error in (diff_error, undo_error):
        assert "zebra" not in str(error.value) and path not in str(error.value)
    assert "changed" in ws.read_text(path)  # untouched


def test_a_file_that_was_visible_and_became_hidden_is_not_shown(ws: SyncWorkspace) -> None:
    ws.write("/docs/open.md", "---\nclassification: confidential\n---\nzebra now secret\n")
    reader = _reader(ws)
    change = ws.changes()[-1]
    with pytest.raises(NotFoundError):
        reader.diff(change.id)  # the after side would show what the reader may not read
    assert all("now secret" not in reader.diff(c.id) for c in reader.changes())


def test_undo_needs_write_access(ws: SyncWorkspace, journal_at: Callable[[], Journal]) -> None:
    readonly = Workspace(
        [Mount.of("/docs", ws.aio.mounts[0].store, scope="read_only")],
        policy=Policy.allow_all(),
        principal=ADMIN,
        journal=journal_at(),
    ).sync()
    ws.write("/docs/open.md", "zebra canteen two\n")
    change = ws.changes()[-1]
    assert "zebra canteen two" in readonly.diff(change.id)
    with pytest.raises(AccessDeniedError):
        readonly.undo(change.id)
    assert ws.read_text("/docs/open.md") == "zebra canteen two\n"


def test_restoring_a_deleted_labelled_file_restores_its_labels(ws: SyncWorkspace) -> None:
    ws.delete("/docs/plan.txt")
    assert not ws.exists("/docs/plan.txt.labels.yaml")  # the sidecar went with it
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/docs/plan.txt") == "zebra launch plan\n"
    assert ws.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})
    with pytest.raises(NotFoundError):
        _reader(ws).read_text("/docs/plan.txt")


def test_undoing_a_move_out_of_a_confidential_mount_keeps_it_confidential(
    ws: SyncWorkspace,
) -> None:
    ws.move("/vault/secret.txt", "/docs/secret.txt")
    reader = _reader(ws)
    with pytest.raises(NotFoundError):
        reader.read_text("/docs/secret.txt")  # carried its labels (a sidecar)
    assert "/docs/secret.txt" not in _seen(reader)
    ws.undo(ws.changes()[-1].id)
    assert ws.read_text("/vault/secret.txt") == "zebra vault\n"
    assert not ws.exists("/docs/secret.txt")
    assert not ws.exists("/docs/secret.txt.labels.yaml")


def test_revert_touches_only_what_the_viewer_may_see(ws: SyncWorkspace) -> None:
    admin = ws.with_thread("shared")
    admin.write("/docs/open.md", "zebra canteen two\n")
    admin.write("/vault/secret.txt", "zebra vault two\n")
    done = _reader(ws).revert("shared")
    assert done.restored == ("/docs/open.md",)
    assert ws.read_text("/vault/secret.txt") == "zebra vault two\n"


def test_every_review_action_is_audited(ws: SyncWorkspace) -> None:
    reader = _reader(ws)
    ws.write("/docs/open.md", "zebra canteen two\n")
    change = ws.changes()[-1].id
    reader.diff(change)
    reader.undo(change)
    reader.checkpoint("cp")
    ops = [r.operation for r in ws.audit.records if r.principal == "reader"]
    assert ops == ["diff", "undo", "checkpoint"]


def test_a_change_names_no_path_the_viewer_may_not_read(
    journal_at: Callable[[], Journal],
) -> None:
    policy = Policy(
        rules=(
            Rule.deny("read", "/docs/private/**", roles={"staff"}),
            Rule.allow(list(Action), "/**"),
        )
    )
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=policy,
        journal=journal_at(),
    ).sync()
    ws.write("/docs/private/plan-for-layoffs.txt", "text\n")
    ws.move("/docs/private/plan-for-layoffs.txt", "/docs/open/renamed.txt")
    staff = ws.with_principal(Principal.of("sam", roles={"staff"}))
    (move,) = staff.changes()
    assert move.target == "/docs/open/renamed.txt"
    assert "private" not in move.path
    assert {e.path for e in move.entries} == {"/docs/open", "/docs/open/renamed.txt"}
    assert "layoffs" not in repr(move) + staff.diff(move.id)


def test_a_hidden_change_reads_like_one_that_never_was(ws: SyncWorkspace) -> None:
    ws.write("/vault/secret.txt", "zebra vault two\n")
    hidden = ws.changes()[-1].id
    missing = hidden + 1000
    reader = _reader(ws)
    for call in (reader.diff, reader.undo):
        with pytest.raises(NotFoundError) as one:
            call(hidden)
        with pytest.raises(NotFoundError) as other:
            call(missing)
        assert str(one.value).replace(str(hidden), "N") == str(other.value).replace(
            str(missing), "N"
        )


def test_a_drop_box_is_not_read_back_through_the_journal(
    journal_at: Callable[[], Journal],
) -> None:
    ws = Workspace(
        [Mount.of("/drop", MemoryStore(), scope="write_only")],
        policy=Policy.allow_all(),
        journal=journal_at(),
    ).sync()
    ws.write("/drop/tip.txt", "zebra anonymous tip\n")
    ws.write("/drop/tip.txt", "zebra second tip\n")
    assert ws.changes() == []  # written blind; never shown back, even to the writer
    with pytest.raises(NotFoundError):
        ws.diff(1)


def test_labels_are_worked_out_from_a_long_front_matter(ws: SyncWorkspace) -> None:
    tags = ", ".join(f"tag{i:04d}" for i in range(800))  # front matter past 4 KiB
    ws.write("/docs/long.md", f"---\nclassification: public\ntags: [{tags}]\n---\nzebra\n")
    (entry,) = ws.changes()[-1].entries
    assert entry.after.labels is not None and entry.after.labels.undetermined == ""
    assert "tag0799" in entry.after.labels.tags
    assert "/docs/long.md" in _seen(_reader(ws))
