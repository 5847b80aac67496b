"""``bastion changes|diff|undo|revert|checkpoint|restore``: the change journal as the acting
principal may see it (docs/changes.md). Each is one call into the blocking workspace facade;
the journal is the one ``[journal]`` in ``bastion.toml`` names."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager

import click

from bastion.cli.audit import parse_time
from bastion.cli.common import common_options, resolve_principal, settings
from bastion.cli.declared import declared_option
from bastion.cli.output import emit, printable
from bastion.cli.session import Session, open_session
from bastion.workspace.operations.changes import (
    ChangeOut,
    ChangesResult,
    CheckpointOut,
    CheckpointsResult,
    RollbackResult,
)

__all__ = ["CHANGE_COMMANDS"]


def _session() -> AbstractContextManager[Session]:
    config = settings()
    assert config is not None
    return open_session(config, resolve_principal(config))


def _line(c: ChangeOut) -> str:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c.at))
    paths = ", ".join(printable(e.path) for e in c.entries[:3])
    more = f" (+{len(c.entries) - 3})" if len(c.entries) > 3 else ""
    return f"{c.id:>6}  {when}  {c.principal}  {c.thread or '-'}  {c.op}  {paths}{more}"


def _rolled(done: RollbackResult) -> str:
    return (
        f"took back {len(done.changes)} change(s): {len(done.restored)} file(s) restored, "
        f"{len(done.removed)} removed"
    )


@click.command("changes")
@click.option("--thread", default=None, help="Only this thread's (or session's) changes.")
@click.option("--since", default=None, help="From this time (or age: 30m, 2h, 7d).")
@declared_option(
    "changes", "principal", "--by", "principal", help="Only the changes this principal made."
)
@click.option("--after", type=click.IntRange(0), default=None, help="Only changes after this id.")
@declared_option("changes", "limit", "--limit", help="Most changes shown (then use --after).")
@common_options()
def changes_command(
    thread: str | None, since: str | None, principal: str | None, after: int | None, limit: int
) -> None:
    """List the changes you may see, oldest first."""
    when = None if since is None else parse_time(since)
    with _session() as session:
        found = session.ws.changes(
            thread=thread, since=when, principal=principal, after=after, limit=limit
        )
    result = ChangesResult(changes=[ChangeOut.of(c) for c in found])
    emit(result.model_dump(), lambda: "\n".join(_line(c) for c in result.changes))


@click.command("diff")
@click.argument("change", type=click.IntRange(1))
@common_options()
def diff_command(change: int) -> None:
    """Show what CHANGE did, as a unified diff per file."""
    with _session() as session:
        text = session.ws.diff(change)
    emit(
        {"change": change, "diff": text},
        lambda: "\n".join(printable(line) for line in text.splitlines()),
    )


@click.command("undo")
@click.argument("change", type=click.IntRange(1), required=False)
@click.option("--last", is_flag=True, help="Your own last change.")
@common_options()
def undo_command(change: int | None, last: bool) -> None:
    """Take CHANGE back (refused if a file changed since)."""
    if (change is None) == (not last):
        raise click.UsageError("give a CHANGE id or --last (not both)")
    with _session() as session:
        done = session.ws.undo_last() if change is None else session.ws.undo(change)
    result = RollbackResult.of(done)
    emit(result.model_dump(), _rolled(result))


@click.command("revert")
@click.argument("thread")
@common_options()
def revert_command(thread: str) -> None:
    """Take back every change of THREAD you may see (all or nothing)."""
    with _session() as session:
        result = RollbackResult.of(session.ws.revert(thread))
    emit(result.model_dump(), _rolled(result))


@click.command("checkpoint")
@click.argument("name", required=False)
@common_options()
def checkpoint_command(name: str | None) -> None:
    """Name this point of the journal as NAME (without NAME: list the checkpoints)."""
    with _session() as session:
        if name is None:
            cps = CheckpointsResult(
                checkpoints=[CheckpointOut.of(c) for c in session.ws.checkpoints()]
            )
            emit(
                cps.model_dump(),
                lambda: "\n".join(f"{c.name}  after change {c.change_id}" for c in cps.checkpoints),
            )
            return
        cp = CheckpointOut.of(session.ws.checkpoint(name))
    emit(cp.model_dump(), f"checkpoint {printable(cp.name)} after change {cp.change_id}")


@click.command("restore")
@click.argument("checkpoint")
@common_options()
def restore_command(checkpoint: str) -> None:
    """Take back every change (you may see) made after CHECKPOINT."""
    with _session() as session:
        result = RollbackResult.of(session.ws.restore(checkpoint))
    emit(result.model_dump(), _rolled(result))


CHANGE_COMMANDS = (
    changes_command,
    diff_command,
    undo_command,
    revert_command,
    checkpoint_command,
    restore_command,
)
