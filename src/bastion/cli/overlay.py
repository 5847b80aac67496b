"""``bastion overlay changes|diff|apply|discard PREFIX``: an overlay mount's layer as the acting
principal may see it (docs/changes.md, "Overlay mounts"). Each is one call into the blocking
workspace facade, ``ws.overlay(PREFIX)``."""

from __future__ import annotations

from contextlib import AbstractContextManager

import click

from bastion.cli.common import common_options, resolve_principal, settings
from bastion.cli.declared import declared_option
from bastion.cli.output import emit, printable
from bastion.cli.session import Session, open_session
from bastion.workspace.operations.overlay import (
    OverlayChangeOut,
    OverlayChangesResult,
    OverlayDiffResult,
    OverlayOutcomeResult,
)

__all__ = ["overlay_group"]


def _session() -> AbstractContextManager[Session]:
    config = settings()
    assert config is not None
    return open_session(config, resolve_principal(config))


def _done(result: OverlayOutcomeResult) -> str:
    lines = [f"applied  {printable(p)}" for p in result.applied]
    lines += [f"conflict {printable(p)} (changed in the base; kept)" for p in result.conflicts]
    lines += [f"dropped  {printable(p)}" for p in result.discarded]
    return "\n".join(lines) or "nothing to do"


_PATHS = click.argument("paths", nargs=-1)


@click.group("overlay")
def overlay_group() -> None:
    """Review, apply or discard what an overlay mount's layer holds."""


@overlay_group.command("changes")
@click.argument("prefix")
@declared_option("overlay_changes", "thread", "--thread")
@common_options()
def changes_command(prefix: str, thread: str | None) -> None:
    """List the changes of the overlay at PREFIX that you may read."""
    with _session() as session:
        found = session.ws.with_thread(thread).overlay(prefix).changes()
    result = OverlayChangesResult.of(found)
    emit(result.model_dump(), lambda: "\n".join(_line(c) for c in result.changes))


def _line(change: OverlayChangeOut) -> str:
    note = "  (conflict: changed in the base since)" if change.conflict else ""
    return f"{change.action:<6}  {change.status:<8}  {printable(change.path)}{note}"


@overlay_group.command("diff")
@click.argument("prefix")
@_PATHS
@declared_option("overlay_diff", "thread", "--thread")
@common_options()
def diff_command(prefix: str, paths: tuple[str, ...], thread: str | None) -> None:
    """Show the changes (PATHS, else all you may see) of PREFIX as a diff against the base."""
    with _session() as session:
        diff = session.ws.with_thread(thread).overlay(prefix).diff(list(paths) or None)
    result = OverlayDiffResult(diff=diff)
    emit(
        result.model_dump(),
        lambda: "\n".join(printable(line) for line in diff.splitlines()) or "no changes",
    )


@overlay_group.command("apply")
@click.argument("prefix")
@_PATHS
@declared_option("overlay_apply", "thread", "--thread")
@common_options()
def apply_command(prefix: str, paths: tuple[str, ...], thread: str | None) -> None:
    """Write the changes (PATHS, else all you may see) into the base of PREFIX."""
    with _session() as session:
        done = session.ws.with_thread(thread).overlay(prefix).apply(list(paths) or None)
    result = OverlayOutcomeResult.of(done)
    emit(result.model_dump(), _done(result))
    if result.conflicts:
        raise SystemExit(1)


@overlay_group.command("discard")
@click.argument("prefix")
@_PATHS
@declared_option("overlay_discard", "thread", "--thread")
@common_options()
def discard_command(prefix: str, paths: tuple[str, ...], thread: str | None) -> None:
    """Drop the changes (PATHS, else all you may see) from the layer of PREFIX."""
    with _session() as session:
        done = session.ws.with_thread(thread).overlay(prefix).discard(list(paths) or None)
    result = OverlayOutcomeResult.of(done)
    emit(result.model_dump(), _done(result))
