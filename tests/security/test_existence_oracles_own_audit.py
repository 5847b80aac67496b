"""A principal's own audit records tell a hidden entry from a missing one no more than the call
did (red-team variants of the existence-oracle class, docs/security.md): they are an answer too.
``Workspace.audit`` (and ``bastion audit``) shows a principal its own records; their reasons
used to carry the guard's true reason ("hidden: labels do not admit the principal") where the
call answered "not found", so reading one's own log told a hidden document from a missing one.
Each call below runs in two fresh worlds, one with the hidden entries and one without, and the
answer and the caller's own records must be the same; an operator (the ``audit`` action) still
reads the true reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bastion import (
    BastionError,
    Labels,
    MemoryStore,
    Mount,
    Policy,
    Principal,
    Rule,
    SyncWorkspace,
    Workspace,
)
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

OWNER = Principal.of("owner", clearance="restricted")
READER = Principal.of("reader", clearance="internal")
SECRET = "---\nclassification: restricted\n---\nzebra secret\n"

HIDE: dict[str, tuple[Rule, ...]] = {
    # how the entries are hidden: their labels, a sidecar, a policy rule
    "labels": (),
    "sidecar": (),
    "rule": (
        Rule.deny("*", "/docs/a.md", principals=["reader"]),
        Rule.deny("*", "/docs/d/**", principals=["reader"]),
    ),
}


def _world(hidden: str | None, *, reserved: bool = False) -> tuple[SyncWorkspace, SyncWorkspace]:
    rules: tuple[Rule, ...] = ()
    if hidden == "rule" or reserved:
        rules = HIDE["rule"]
    if reserved:  # a rule reserving the names: the answer a write onto a hidden name gives
        rules = (*rules, Rule.deny(("write", "delete"), "/docs/a.md", principals=["reader"]))
    policy = Policy(
        rules=(
            Rule.allow("audit", "/", principals=["owner"]),
            *rules,
            Rule.allow("*", "/**"),
        )
    )
    owner = Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal"))],
        policy=policy,
        principal=OWNER,
        knowledge=Knowledge(MemoryIndex()),
    ).sync()
    owner.write("/docs/open.md", "zebra open\n")
    if hidden is not None:
        text = "zebra secret\n" if hidden == "sidecar" else SECRET
        owner.write("/docs/a.md", text)
        owner.write("/docs/d/x.md", text)
        if hidden == "sidecar":
            owner.write("/docs/a.md.labels.yaml", "classification: restricted\n")
            owner.write("/docs/d/x.md.labels.yaml", "classification: restricted\n")
    return owner, owner.aio.with_principal(READER).sync()


CALLS: dict[str, Callable[[SyncWorkspace], Any]] = {
    "read": lambda r: r.read_text("/docs/a.md"),
    "read_lines": lambda r: r.read_lines("/docs/a.md", offset=1, limit=1),
    "read range": lambda r: r.read_bytes("/docs/a.md", start=0, end=4),
    "stat": lambda r: r.stat("/docs/a.md"),
    "exists": lambda r: r.exists("/docs/a.md"),
    "exists folder": lambda r: r.exists("/docs/d"),
    "exists below": lambda r: r.exists("/docs/d/x.md"),
    "list folder": lambda r: r.list("/docs/d"),
    "list": lambda r: [str(e.path) for e in r.list("/docs")],
    "glob braces": lambda r: [str(e.path) for e in r.glob("/docs/{a,open}.md")],
    "glob deep": lambda r: [str(e.path) for e in r.glob("/docs/**/[ax]*.md")],
    "grep file": lambda r: r.grep("zebra", "/docs/a.md"),
    "grep folder": lambda r: r.grep("zebra", "/docs/d"),
    "grep all": lambda r: sorted(m.path for m in r.grep("zebra", "/docs").matches),
    "copy from": lambda r: r.copy("/docs/a.md", "/docs/c.md"),
    "move from": lambda r: r.move("/docs/a.md", "/docs/c.md"),
    "edit": lambda r: r.edit("/docs/a.md", "zebra", "x"),
    "sidecar read": lambda r: r.read_text("/docs/a.md.labels.yaml"),
    "sidecar stat": lambda r: r.stat("/docs/a.md.labels.yaml"),
    "search": lambda r: [h.path for h in r.search("zebra", mode="bm25").hits],
}
ONTO: dict[str, Callable[[SyncWorkspace], Any]] = {
    # a change onto the hidden name: refused as a rule reserving the name refuses it
    "write onto": lambda r: r.write("/docs/a.md", "x"),
    "create onto": lambda r: r.write("/docs/a.md", "x", mode="create"),
    "copy onto": lambda r: r.copy("/docs/open.md", "/docs/a.md", overwrite=True),
    "mkdir onto": lambda r: r.mkdir("/docs/a.md"),
}


def _outcome(reader: SyncWorkspace, call: Callable[[SyncWorkspace], Any]) -> tuple[Any, ...]:
    before = len(reader.audit.records)
    try:
        answer: Any = call(reader)
        if not isinstance(answer, bool | list):
            answer = "done"
    except BastionError as exc:
        answer = f"{type(exc).__name__}: {exc}"
    own = [
        (r.operation, r.path, r.target, r.allowed, r.reason, r.told, r.bytes)
        for r in reader.audit.records[before:]
    ]
    return answer, own


@pytest.mark.parametrize("hide", sorted(HIDE))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_own_audit_records_read_the_same_for_a_hidden_and_a_missing_entry(
    hide: str, call: str
) -> None:
    _, with_hidden = _world(hide)
    # a rule is part of the world: the same rules, without the entries
    without = _world_rules_only() if hide == "rule" else _world(None)[1]
    assert _outcome(with_hidden, CALLS[call]) == _outcome(without, CALLS[call])


def _world_rules_only() -> SyncWorkspace:
    policy = Policy(rules=(*HIDE["rule"], Rule.allow("*", "/**")))
    owner = Workspace(
        [Mount.of("/docs", MemoryStore(), labels=Labels(classification="internal"))],
        policy=policy,
        principal=OWNER,
        knowledge=Knowledge(MemoryIndex()),
    ).sync()
    owner.write("/docs/open.md", "zebra open\n")
    return owner.aio.with_principal(READER).sync()


@pytest.mark.parametrize("hide", sorted(HIDE))
@pytest.mark.parametrize("call", sorted(ONTO))
def test_own_audit_records_of_a_change_onto_a_hidden_name_read_as_a_reserved_name(
    hide: str, call: str
) -> None:
    _, with_hidden = _world(hide)
    _, reserved = _world(None, reserved=True)
    answer, own = _outcome(with_hidden, ONTO[call])
    assert (answer, own) == _outcome(reserved, ONTO[call])
    assert str(answer).startswith("PolicyDeniedError: write on /docs/a.md")


def test_an_operator_reads_what_was_told_and_the_log_keeps_the_true_reason() -> None:
    """An operator's audit view answers what each principal was told (what the operator reads
    of it must not depend on what the operator may not see); the true reason stays in the
    sink itself, and ``bastion explain`` says why."""
    owner, reader = _world("labels")
    with pytest.raises(BastionError, match="not found"):
        reader.read_text("/docs/a.md")
    mine = reader.audit.records[-1]
    assert mine.reason == "NotFoundError: /docs/a.md not found" and mine.told is None
    seen = [r for r in owner.audit.records if r.principal == "reader"][-1]
    assert seen.reason == "NotFoundError: /docs/a.md not found" and seen.told is None
    kept = [r for r in owner.aio._shared.audit.records if r.principal == "reader"][-1]
    assert kept.reason == "hidden: labels do not admit the principal"
    assert kept.told == "NotFoundError: /docs/a.md not found"
