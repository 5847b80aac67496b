"""Attacks on the change journal's review and undo, at its edges: labels that must travel with
restored content even where the viewer sees only part of a change, a principal of another
tenant bearing the same id, checkpoints named across tenants, hidden and missing answered
alike, pages and cursors that skip hidden changes the same way, an undo that would write
where the viewer may not. Each runs against both journals: a SQLite file and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bastion import (
    AccessDeniedError,
    ConflictError,
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
HANA = Principal.of("hana", tenant="acme", roles={"hr"}, clearance="internal")
"""In HR, cleared to internal: sees HR files in /docs, nothing in the confidential /vault."""
READER = Principal.of("reader", tenant="acme", clearance="internal")
BOB_ACME = Principal.of("bob", tenant="acme")
BOB_GLOBEX = Principal.of("bob", tenant="globex")
"""Another tenant's principal with the same id."""


@pytest.fixture(params=["sqlite", "postgresql"])
def journal_at(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Journal]]:
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
    return Workspace(
        [
            Mount.of("/docs", MemoryStore(), labels=Labels(classification="public")),
            Mount.of("/vault", MemoryStore(), labels=Labels(classification="confidential")),
            Mount.of("/shared", MemoryStore()),
        ],
        policy=Policy.allow_all(),
        principal=ADMIN,
        journal=journal_at(),
    ).sync()


def _hr_file_with_a_sidecar_also_used_in_the_vault(ws: SyncWorkspace) -> None:
    """/docs/plan.txt is HR's by its sidecar; the same sidecar text labels a vault file, so
    the journal has seen that content confidential and hides it from HANA."""
    ws.write("/vault/x.txt", "vault\n")
    ws.write("/vault/x.txt.labels.yaml", "roles: [hr]\n")
    ws.write("/docs/plan.txt", "zebra plan\n")
    ws.write("/docs/plan.txt.labels.yaml", "roles: [hr]\n")


def test_undoing_a_delete_brings_the_file_back_as_hard_to_read_as_it_was(
    ws: SyncWorkspace,
) -> None:
    _hr_file_with_a_sidecar_also_used_in_the_vault(ws)
    ws.delete("/docs/plan.txt")  # its sidecar goes with it
    hana = ws.with_principal(HANA)
    (change,) = [c for c in hana.changes() if c.op == "delete"]
    assert [e.path for e in change.entries] == ["/docs/plan.txt"]  # the sidecar's is hidden
    hana.undo(change.id)
    assert hana.read_text("/docs/plan.txt") == "zebra plan\n"
    assert ws.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})
    with pytest.raises(NotFoundError):
        ws.with_principal(READER).read_text("/docs/plan.txt")


def test_undoing_a_move_part_seen_keeps_the_file_labelled(ws: SyncWorkspace) -> None:
    _hr_file_with_a_sidecar_also_used_in_the_vault(ws)
    ws.move("/docs/plan.txt", "/docs/moved.txt")
    hana = ws.with_principal(HANA)
    hana.undo(hana.changes()[-1].id)
    assert ws.read_text("/docs/plan.txt") == "zebra plan\n"
    assert not ws.exists("/docs/moved.txt")
    with pytest.raises(NotFoundError):
        ws.with_principal(READER).read_text("/docs/plan.txt")
    assert "/docs/plan.txt" not in {
        e.path for c in ws.with_principal(READER).changes() for e in c.entries
    }


def test_a_revert_and_a_restore_keep_labels_too(ws: SyncWorkspace) -> None:
    _hr_file_with_a_sidecar_also_used_in_the_vault(ws)
    ws.checkpoint("before")
    ws.with_thread("t").delete("/docs/plan.txt")
    hana = ws.with_principal(HANA)
    hana.revert("t")
    assert ws.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})
    ws.with_thread("t").delete("/docs/plan.txt")
    hana.restore("before")
    assert ws.stat("/docs/plan.txt").labels.roles == frozenset({"hr"})
    with pytest.raises(NotFoundError):
        ws.with_principal(READER).read_text("/docs/plan.txt")


def test_undo_last_never_takes_back_another_tenants_change(ws: SyncWorkspace) -> None:
    ws.with_principal(BOB_ACME).write("/shared/x.txt", "acme's bob\n")
    globex = ws.with_principal(BOB_GLOBEX)
    with pytest.raises(NotFoundError) as error:
        globex.undo_last()
    assert str(error.value) == "you have no change to undo"
    assert ws.read_text("/shared/x.txt") == "acme's bob\n"
    globex.write("/shared/y.txt", "globex's bob\n")
    done = globex.undo_last()  # its own, not acme's later one
    assert done.removed == ("/shared/y.txt",)
    assert ws.exists("/shared/x.txt")


def test_checkpoints_are_the_tenants(ws: SyncWorkspace) -> None:
    acme, globex = ws.with_principal(BOB_ACME), ws.with_principal(BOB_GLOBEX)
    acme.checkpoint("before-layoffs")
    acme.write("/shared/x.txt", "acme\n")
    assert globex.checkpoints() == []  # not named, not counted
    with pytest.raises(NotFoundError) as hidden:
        globex.restore("before-layoffs")
    with pytest.raises(NotFoundError) as absent:
        globex.restore("never-made")
    assert str(hidden.value).replace("before-layoffs", "N") == str(absent.value).replace(
        "never-made", "N"
    )
    assert "\x1f" not in str(hidden.value) and "acme" not in str(hidden.value)
    assert ws.exists("/shared/x.txt")  # nothing restored
    made = globex.checkpoint("before-layoffs")  # the name is free in this tenant
    assert made.name == "before-layoffs"
    ((name, change_id),) = [(c.name, c.change_id) for c in acme.checkpoints()]
    assert (name, change_id) == ("before-layoffs", 0)  # acme's is not moved
    assert [c.name for c in globex.checkpoints()] == ["before-layoffs"]
    acme.restore("before-layoffs")
    assert not ws.exists("/shared/x.txt")


def test_a_checkpoint_another_principal_named_is_not_moved(ws: SyncWorkspace) -> None:
    ws.checkpoint("release")
    ws.write("/docs/a.txt", "a\n")
    hana = ws.with_principal(HANA)
    with pytest.raises(ConflictError):
        hana.checkpoint("release")
    assert [c.change_id for c in ws.checkpoints()] == [0]
    ws.checkpoint("release")  # its own is moved
    assert [c.change_id for c in hana.checkpoints()] == [ws.changes()[-1].id]


def test_a_thread_of_hidden_changes_reads_like_no_thread(ws: SyncWorkspace) -> None:
    ws.with_thread("payroll").write("/vault/pay.txt", "zebra pay\n")
    reader = ws.with_principal(READER)
    assert reader.changes(thread="payroll") == []
    with pytest.raises(NotFoundError) as hidden:
        reader.revert("payroll")
    with pytest.raises(NotFoundError) as absent:
        reader.revert("nothing")
    assert str(hidden.value).replace("payroll", "T") == str(absent.value).replace("nothing", "T")
    assert ws.read_text("/vault/pay.txt") == "zebra pay\n"


def test_pages_and_cursors_skip_hidden_changes_alike(ws: SyncWorkspace) -> None:
    for i in range(5):
        ws.write(f"/docs/f{i}.txt", f"{i}\n")
        ws.write(f"/vault/s{i}.txt", f"zebra {i}\n")
    reader = ws.with_principal(READER)
    whole = [c.id for c in reader.changes()]
    assert len(whole) == 5
    paged: list[int] = []
    after = None
    while page := reader.changes(limit=2, after=after):
        paged += [c.id for c in page]
        after = page[-1].id
    assert paged == whole
    since = ws.changes()[3].at  # the second hidden change's time
    assert [c.id for c in reader.changes(since=since)] == [i for i in whole if i > 3]


def test_a_file_relabelled_by_a_sidecar_later_hides_its_history(ws: SyncWorkspace) -> None:
    ws.write("/docs/memo.txt", "zebra memo\n")
    ws.write("/docs/memo.txt", "zebra memo two\n")
    edit = ws.changes()[-1].id
    ws.write("/docs/memo.txt.labels.yaml", "classification: confidential\n")
    reader = ws.with_principal(READER)

    def told() -> str:  # every path and diff the reader is shown
        shown = reader.changes()
        return repr([e.path for c in shown for e in c.entries]) + "".join(
            reader.diff(c.id) for c in shown
        )

    assert "memo" not in told()  # neither the file nor its sidecar (which names it)
    with pytest.raises(NotFoundError):
        reader.diff(edit)
    with pytest.raises(NotFoundError):
        reader.undo(edit)
    ws.delete("/docs/memo.txt")  # gone now: its history stays as hard to read as it was
    assert "memo" not in told()


def test_an_undo_that_would_write_where_the_viewer_may_not_writes_nothing(
    journal_at: Callable[[], Journal],
) -> None:
    policy = Policy(
        rules=(
            Rule.deny("write", "/d/locked/**", roles={"staff"}),
            Rule.allow(list(Action), "/**"),
        )
    )
    ws = Workspace([Mount.of("/d", MemoryStore())], policy=policy, journal=journal_at()).sync()
    ws.write("/d/open/a.txt", "a1\n")
    ws.write("/d/locked/b.txt", "b1\n")
    t = ws.with_thread("t")
    t.write("/d/open/a.txt", "a2\n")
    t.write("/d/locked/b.txt", "b2\n")
    staff = ws.with_principal(Principal.of("sam", roles={"staff"}))
    with pytest.raises(AccessDeniedError):
        staff.revert("t")
    assert ws.read_text("/d/open/a.txt") == "a2\n"  # nothing was written
    assert ws.read_text("/d/locked/b.txt") == "b2\n"


def test_review_actions_are_audited_without_content(ws: SyncWorkspace) -> None:
    ws.write("/vault/s.txt", "zebra secret\n")
    hidden = ws.changes()[-1].id
    reader = ws.with_principal(READER)
    for call in (reader.diff, reader.undo):
        with pytest.raises(NotFoundError):
            call(hidden)
    reader.changes()
    reader.checkpoint("mine")
    with pytest.raises(NotFoundError):
        reader.restore("theirs")
    mine = [r for r in ws.audit.records if r.principal == "reader"]
    assert [(r.operation, r.allowed) for r in mine] == [
        ("diff", False),
        ("undo", False),
        ("changes", True),
        ("checkpoint", True),
        ("restore", False),
    ]
    assert all("zebra" not in repr(r) and "/vault" not in repr(r) for r in mine)


def test_another_threads_overlay_layer_is_neither_shown_nor_undone_into_mine(
    tmp_path: Path, journal_at: Callable[[], Journal]
) -> None:
    """An overlay mount has a layer per thread: ``/code/draft.md`` is another file in each.
    Alice's unapplied draft is not shown to a view of another thread, and an undo there would
    write it into that thread's layer: neither happens."""
    from bastion.config import MountConfig

    (tmp_path / "project").mkdir()
    mount = MountConfig("/code", "file:project", overlay="file:layers").open(tmp_path)
    ws = Workspace([mount], policy=Policy.allow_all(), journal=journal_at()).sync()
    alice = ws.with_principal(BOB_ACME).with_thread("t1")
    alice.write("/code/draft.md", "zebra draft\n")
    alice.delete("/code/draft.md")
    for other in (ws.with_thread("t2"), ws):  # another thread's layer; the shared one
        assert other.changes() == []
        for change in alice.changes():
            for call in (other.diff, other.undo):
                with pytest.raises(NotFoundError):
                    call(change.id)
        with pytest.raises(NotFoundError):
            other.revert("t1")
        assert not other.exists("/code/draft.md")
    alice.undo(alice.changes()[-1].id)  # in its own layer
    assert alice.read_text("/code/draft.md") == "zebra draft\n"
    assert not (tmp_path / "project" / "draft.md").exists()  # the base is unchanged


def test_a_checkpoint_tells_the_last_change_the_viewer_may_see_not_the_count(
    ws: SyncWorkspace,
) -> None:
    reader = ws.with_principal(READER)
    reader.checkpoint("empty")
    ws.write("/vault/s1.txt", "zebra 1\n")
    reader.checkpoint("after-hidden")
    ws.write("/docs/a.txt", "a\n")
    visible = ws.changes()[-1].id
    ws.write("/vault/s2.txt", "zebra 2\n")
    ws.write("/vault/s3.txt", "zebra 3\n")
    made = reader.checkpoint("later")
    assert made.change_id == visible
    assert [(c.name, c.change_id) for c in reader.checkpoints()] == [
        ("empty", 0),
        ("after-hidden", 0),
        ("later", visible),
    ]
    assert [c.change_id for c in ws.checkpoints()] == [0, 1, ws.changes()[-1].id]


def test_undoing_a_relabel_restores_the_old_label(ws: SyncWorkspace) -> None:
    ws.write("/docs/memo.txt", "zebra memo\n")
    ws.write("/docs/memo.txt.labels.yaml", "roles: [hr]\n")  # tightened
    hana, reader = ws.with_principal(HANA), ws.with_principal(READER)
    ws.delete("/docs/memo.txt.labels.yaml")  # loosened: everyone reads it
    assert reader.read_text("/docs/memo.txt") == "zebra memo\n"
    loosening = ws.changes()[-1].id
    with pytest.raises(NotFoundError):  # the reader never saw what it undoes
        reader.undo(loosening)
    hana.undo(loosening)
    with pytest.raises(NotFoundError):
        reader.read_text("/docs/memo.txt")
    assert ws.stat("/docs/memo.txt").labels.roles == frozenset({"hr"})


def test_the_audit_tells_a_hidden_change_as_a_missing_one(ws: SyncWorkspace) -> None:
    ws.write("/vault/s.txt", "zebra secret\n")
    hidden = ws.changes()[-1].id
    missing = hidden + 1000
    reader = ws.with_principal(READER)
    for change in (hidden, missing):
        for call in (reader.diff, reader.undo):
            with pytest.raises(NotFoundError):
                call(change)
    records = [r for r in ws.audit.records if r.principal == "reader"]
    said = [
        (r.operation, r.path, r.allowed, (r.told or r.reason).replace(str(n), "N"), r.bytes)
        for r, n in zip(records, (hidden, hidden, missing, missing), strict=True)
    ]
    assert said[:2] == said[2:]


def test_a_revert_that_would_loosen_a_label_without_the_right_writes_nothing(
    journal_at: Callable[[], Journal],
) -> None:
    """Undoing a tightening loosens the file again: that needs the ``label`` permission. The
    refusal comes before anything is written, even the sidecar the revert could restore."""
    policy = Policy(
        rules=(
            Rule.allow([a for a in Action if a is not Action.LABEL], "/**", roles={"staff"}),
            Rule.allow(list(Action), "/**", roles={"admin"}),
        )
    )
    admin = Principal.of("adm", roles={"admin"}, clearance="restricted")
    ws = Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="public"))],
        policy=policy,
        principal=admin,
        journal=journal_at(),
    ).sync()
    ws.write("/docs/a.txt", "a\n")
    ws.write("/docs/a.txt.labels.yaml", "classification: internal\n")
    ws.write("/docs/b.txt", "b\n")
    ws.write("/docs/b.txt.labels.yaml", "classification: public\n")
    t = ws.with_thread("t")
    t.write("/docs/b.txt.labels.yaml", "classification: internal\n")  # tightens b
    t.write("/docs/a.txt.labels.yaml", "classification: public\n")  # loosens a
    staff = ws.with_principal(Principal.of("sam", roles={"staff"}, clearance="internal"))
    with pytest.raises(AccessDeniedError, match="label permission"):
        staff.revert("t")
    assert ws.read_text("/docs/a.txt.labels.yaml") == "classification: public\n"
    assert ws.read_text("/docs/b.txt.labels.yaml") == "classification: internal\n"
