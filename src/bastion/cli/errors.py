"""Errors and exit codes of the command line: one table from the library's error tree to
stable codes (:data:`ERROR_CODES`), and the group that shows every error once, as text or,
with ``--json``, as ``{"error": CODE, "message": ...}`` on stderr (:class:`BastionGroup`).

Exit codes: :data:`EXIT_OK`, :data:`EXIT_ERROR`, :data:`EXIT_USAGE`, :data:`EXIT_SKIPPED`
(an index run skipped files) and :data:`EXIT_UNVERIFIED` (``ask``: the answer failed its
verification); ``docs/cli.md`` lists them with every code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

import click

from bastion.cli.logs import reset_logging
from bastion.core.errors import (
    BastionError,
)
from bastion.core.extras import needs

__all__ = [
    "ERROR_CODES",
    "EXIT_CODES",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_SKIPPED",
    "EXIT_UNVERIFIED",
    "EXIT_USAGE",
    "BastionGroup",
    "CliError",
    "error_code",
    "fail",
]

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_ERROR = 1
"""An error: the message (or the JSON ``error`` object) says which."""
EXIT_USAGE = 2
"""The command line itself is wrong (an unknown option, a missing argument, a bad value)."""
EXIT_SKIPPED = 3
"""An index run finished but skipped files (each named once, with its reason)."""
EXIT_UNVERIFIED = 4
"""``bastion ask``: an answer came back but failed its verification."""

EXIT_CODES: tuple[tuple[str, str], ...] = (
    ("0", "done (`grep`: a line matched)"),
    (
        "1",
        "an error; the message (or the JSON object) says which (`grep`: no line matched, "
        "as grep does)",
    ),
    (
        "2",
        "a usage error: an unknown option, a missing argument, a bad value, options that do "
        "not go together (`grep`: any error)",
    ),
    ("3", "an index run finished but skipped files"),
    ("4", "`ask`: the answer failed its verification"),
    ("any", "`run`: the command's own exit status (`128 + N` for a signal)"),
)
"""The exit codes, as ``docs/cli.md`` lists them (a test holds the page to this table)."""

ERROR_CODES: Mapping[type[BaseException], str] = {
    click.UsageError: "usage",
    click.ClickException: "error",
}
"""The codes of click's own errors; every Bastion error carries its stable ``code`` (the one
table in :mod:`bastion.core.errors`, shared with the HTTP API). Codes never change once
published."""


def error_code(exc: BaseException) -> str:
    """The stable code of ``exc``: a Bastion error's ``code``, a command-line error's own, or
    click's (:data:`ERROR_CODES`)."""
    if isinstance(exc, BastionError):
        return exc.code
    if isinstance(exc, CliError):
        return exc.code
    for cls in type(exc).__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return "error"


class CliError(click.ClickException):
    """An error the command line itself finds (an unknown user, a missing index), with its
    stable code."""

    def __init__(
        self,
        message: str,
        code: str = "error",
        *,
        exit_code: int = 1,
        remedy: tuple[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.remedy = remedy
        self.exit_code = exit_code  # type: ignore[misc]  # per error, not per class


def safe_json(data: Any, *, indent: int | None = None) -> str:
    """``data`` as JSON for a terminal or a pipe: readable text as it is, and every character
    a terminal would act on or hide (a control, a bidirectional override, a line separator, a
    lone surrogate from an undecodable argument) as its ``\\u`` escape, which any JSON reader
    turns back into the same text."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    if text.isascii() and "\x7f" not in text:
        return text  # json escapes every other ASCII control
    return "".join(c if c.isprintable() or c == "\n" else json.dumps(c)[1:-1] for c in text)


def in_flags(message: str, remedy: tuple[str, object] | None, command: Any) -> str:
    """``message`` with the Python remedy it names (``pass overwrite=True``, from the error's
    :attr:`~bastion.core.errors.BastionError.remedy`) said as ``command``'s flag
    (``pass -f/--overwrite``); unchanged when the command has no option for it."""
    if remedy is None or command is None:
        return message
    name, value = remedy
    for param in getattr(command, "params", ()):
        if isinstance(param, click.Option) and param.name == name:
            flags = "/".join(param.opts)
            if not param.is_flag:
                said = f"pass {param.opts[-1]} {value}"
            elif bool(value) == bool(param.flag_value):
                said = f"pass {flags}"
            else:
                said = f"leave out {flags}"
            return message.replace(f"pass {name}={value!r}", said)
    return message


def fail(
    exc: BaseException,
    *,
    as_json: bool,
    stream: IO[str] | None = None,
    command: Any = None,
) -> int:
    """Report ``exc`` on stderr and return the exit code for it; a remedy the error names is
    said in ``command``'s flags (:func:`in_flags`)."""
    code = error_code(exc)
    if isinstance(exc, click.ClickException):
        message = exc.format_message()
        status = exc.exit_code
    else:
        message = str(exc)
        status = EXIT_ERROR
    remedy = getattr(exc, "remedy", None)
    message = in_flags(message, remedy, command)
    if as_json:
        click.echo(safe_json({"error": code, "message": message}), err=True)
    elif isinstance(exc, CliError) and remedy is not None:
        click.echo(f"Error: {message}", err=True)
    elif isinstance(exc, click.ClickException):
        exc.show(stream)
    else:
        click.echo(f"Error: {message}", err=True)
    return status


class BastionGroup(click.Group):
    """The ``bastion`` group: every error a command raises, whether ours or click's, is shown
    once on stderr (a JSON object with ``--json``) with its documented exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        raw = list(sys.argv[1:] if args is None else args)
        before = raw[: raw.index("--")] if "--" in raw else raw
        as_json = "--json" in before
        command = next((arg for arg in before if not arg.startswith("-")), "")
        try:
            with needs(f"bastion {command}".strip()):
                result = super().main(raw, prog_name, complete_var, False, **extra)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_ERROR)
        except (click.ClickException, BastionError) as exc:
            sys.exit(fail(exc, as_json=as_json, command=self.commands.get(command)))
        finally:
            reset_logging()
        sys.exit(result if isinstance(result, int) else EXIT_OK)
