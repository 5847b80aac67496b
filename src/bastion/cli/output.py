"""What a command prints: results (text, or JSON with ``--json``), notes for a person, and
progress of long jobs, all but results on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from bastion.cli.common import options
from bastion.cli.errors import safe_json
from bastion.core.principal import Principal

if TYPE_CHECKING:
    from bastion.knowledge.indexer import IndexProgress

__all__ = ["Progress", "emit", "json_text", "note", "principal_dict", "printable", "shown"]


def emit(data: Any, text: str | Callable[[], str]) -> None:
    """Print a result: ``data`` as JSON with ``--json``, else ``text`` (or what it returns)."""
    if options().as_json:
        click.echo(json_text(data))
    else:
        shown_text = text() if callable(text) else text
        if shown_text:
            click.echo(shown_text)


def json_text(data: Any) -> str:
    """``data`` as indented JSON, safe for a terminal (:func:`~bastion.cli.errors.safe_json`)."""
    return safe_json(data, indent=2)


def note(message: str) -> None:
    """A note for a person on stderr (not with ``-q`` nor ``--json``)."""
    opts = options()
    if not opts.quiet and not opts.as_json:
        click.echo(message, err=True)


def printable(text: str) -> str:
    """``text`` for a terminal: control characters (an escape sequence in a path) written as
    their escapes, so a record cannot rewrite the screen it is shown on."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def shown(principal: Principal) -> str:
    """``ana@larkspur``: how a note names a principal."""
    return f"{principal.id}@{principal.tenant}"


def principal_dict(principal: Principal) -> dict[str, Any]:
    return {
        "id": principal.id,
        "tenant": principal.tenant,
        "roles": sorted(principal.roles),
        "clearance": principal.clearance,
        "tags": sorted(principal.tags),
    }


class Progress:
    """Progress of a long job on stderr: a bar on a terminal, else a line every 10% (and at
    the end); nothing with ``-q``. Call it as ``progress(done, total, path)``."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = not options().quiet
        self.tty = self.enabled and sys.stderr.isatty()
        self._bar: Any = None
        self._shown = -1
        self._segment: dict[str, int] = {}

    def __call__(self, done: int, total: int, _path: str = "") -> None:
        if not self.enabled or total <= 0:
            return
        if self.tty:
            if self._bar is None:
                self._bar = click.progressbar(
                    length=total, label=self.label, show_pos=True, file=sys.stderr
                )
                self._bar.__enter__()
            self._bar.length = total
            self._bar.update(done - self._bar.pos)
            return
        tenth = done * 10 // total
        if tenth > self._shown:
            self._shown = tenth
            click.echo(f"{self.label}: {done}/{total}", err=True)

    def segment(self, step: IndexProgress) -> None:
        """A large file indexed a segment at a time: its share so far, on the bar's label on a
        terminal, else a line at each tenth of the file."""
        if not self.enabled or step.total <= 0:
            return
        share = min(100, step.done * 100 // step.total)
        if self.tty:
            if self._bar is not None:
                self._bar.label = f"{self.label} {step.path} {share}%"
                self._bar.render_progress()
            return
        tenth = share // 10
        if tenth > self._segment.get(step.path, -1):
            self._segment[step.path] = tenth
            click.echo(f"{self.label}: {step.path} {share}% ({step.chunks} chunks)", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
