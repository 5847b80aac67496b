"""File commands: the workspace exactly as the acting principal sees it.

``ls``, ``tree``, ``stat``, ``cat``, ``put``, ``rm``, ``mv``, ``cp``, ``grep`` and ``glob``
are one call each into the blocking workspace facade, through the same guard as every other
entry point: a file the principal may not see is ``not found``, exactly as in the library.
What they print is made from the principal's own answers alone: no command tells whether
something hidden exists or matches (``bastion.cli.session``).
"""

from __future__ import annotations

import base64
import sys
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from bastion.cli.common import common_options, options, resolve_principal, settings
from bastion.cli.declared import declared_option
from bastion.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError
from bastion.cli.output import emit, note
from bastion.cli.session import Session, open_session
from bastion.core.errors import BastionError
from bastion.workspace.operations import operation

if TYPE_CHECKING:
    from bastion.core.models import FileInfo

__all__ = ["FILE_COMMANDS"]


def _session(*, index: bool = False) -> AbstractContextManager[Session]:
    """The workspace of ./bastion.toml (or --config), acting for --as/--token; with its
    ``[knowledge]`` index when ``index`` (a write is then searchable when it returns)."""
    config = settings()
    assert config is not None
    return open_session(config, resolve_principal(config), index=index)


_NO_INDEX = click.option(
    "--no-index",
    is_flag=True,
    help="Leave the search index as it is (bulk copies: run `bastion index` once at the end).",
)


def info_dict(info: FileInfo) -> dict[str, Any]:
    """One entry as JSON."""
    return {
        "path": str(info.path),
        "name": info.path.name if not info.path.is_root else "/",
        "kind": info.kind.value,
        "size": info.size,
        "modified": _when(info.mtime),
        "version": info.version,
    }


def _when(mtime: float) -> str | None:
    if not mtime:
        return None
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@click.command("ls")
@click.argument("path", default="/")
@click.option("-l", "--long", "long_", is_flag=True, help="Kind, size and modification time.")
@common_options()
def ls_command(path: str, long_: bool) -> None:
    """List the entries of the folder PATH (default /) that you may see."""
    with _session() as session:
        entries = session.ws.list(path)

        def text() -> str:
            if long_:
                return "\n".join(_long(e) for e in entries)
            return "\n".join(e.path.name + ("/" if e.is_dir else "") for e in entries)

        emit({"path": path, "entries": [info_dict(e) for e in entries]}, text)


def _long(e: FileInfo) -> str:
    kind = "d" if e.is_dir else "-"
    when = _when(e.mtime) or "-"
    return f"{kind} {e.size:>10} {when:<20} {e.path.name}{'/' if e.is_dir else ''}"


@click.command("tree")
@click.argument("path", default="/")
@declared_option("list", "depth", "--depth", help="Levels to show (default all).")
@common_options()
def tree_command(path: str, depth: int | None) -> None:
    """Show the folder PATH (default /) and everything below it that you may see."""
    with _session() as session:
        entries = session.ws.list(path, recursive=True, depth=depth)
        base = len(session.ws.stat(path).path.parts)

        def text() -> str:
            lines = [path]
            for e in entries:
                indent = "  " * (len(e.path.parts) - base - 1)
                lines.append(f"{indent}{e.path.name}{'/' if e.is_dir else ''}")
            return "\n".join(lines)

        emit({"path": path, "entries": [info_dict(e) for e in entries]}, text)


@click.command("stat")
@click.argument("path")
@common_options()
def stat_command(path: str) -> None:
    """Kind, size, modification time and version of PATH."""
    with _session() as session:
        info = session.ws.stat(path)
        data = info_dict(info)
        emit(data, lambda: "\n".join(f"{k}: {v}" for k, v in data.items() if v is not None))


def _range(text: str, what: str) -> tuple[int | None, int | None]:
    """``A:B``, ``A:``, ``:B`` or ``A`` (a single line) as two optional numbers."""
    head, colon, tail = text.partition(":")
    try:
        start = int(head) if head else None
        end = int(tail) if tail else None
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: use START:END, START: or :END", param_hint=what
        ) from None
    if not colon:
        end = start
    if (start is not None and start < 0) or (end is not None and end < 0):
        raise click.BadParameter(f"{text!r}: numbers must not be negative", param_hint=what)
    if start is not None and end is not None and end < start:
        raise click.BadParameter(f"{text!r}: END comes before START", param_hint=what)
    return start, end


_DOCUMENTS = (".pdf", ".docx")
"""Files ``cat`` shows as their text (what search indexes), not as bytes."""


def _document_text(path: str, data: bytes, first: int, limit: int | None) -> str:
    """A PDF's or a Word document's text, as the index reads it and ``read`` with
    ``format=document`` answers it (``bastion.workspace.documents``): lines ``first`` on, at
    most ``limit``."""
    from bastion.workspace.documents import document_text, window

    text, parsed = document_text(data, path)
    if parsed:
        note(f"note: the text of {path} (`cat --bytes :` prints the file itself)")
    shown_text = window(text, first - 1, limit)
    return shown_text if shown_text.endswith("\n") or not shown_text else shown_text + "\n"


@click.command("cat")
@click.argument("path")
@click.option(
    "--lines",
    "line_range",
    metavar="A:B",
    default=None,
    help="Only lines A to B (1-based, inclusive; A: to the end, :B from the start, N one line).",
)
@click.option(
    "--bytes",
    "byte_range",
    metavar="A:B",
    default=None,
    help="Only bytes A to B (0-based, B excluded), written as they are.",
)
@common_options()
def cat_command(path: str, line_range: str | None, byte_range: str | None) -> None:
    """Print the file PATH, or a range of its lines or bytes (only the range is read). A PDF
    or Word document (.pdf, .docx) prints as its text."""
    if line_range is not None and byte_range is not None:
        raise click.UsageError("give --lines or --bytes, not both")
    with _session() as session:
        if byte_range is not None:
            start, end = _range(byte_range, "--bytes")
            if end is not None and ":" not in byte_range:
                end += 1
            data = session.ws.read_bytes(path, start=start, end=end)
            if options().as_json:
                emit(
                    {
                        "path": path,
                        "start": start or 0,
                        "size": len(data),
                        "text": data.decode("utf-8", "replace"),
                        "base64": base64.b64encode(data).decode("ascii"),
                    },
                    "",
                )
            else:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            return
        first = 1
        limit = None
        if line_range is not None:
            start, end = _range(line_range, "--lines")
            first = max(start or 1, 1)
            limit = None if end is None else max(end - first + 1, 0)
            most = operation("read").bounds("limit")[1]
            if limit is not None and most is not None and limit > most:
                raise click.BadParameter(
                    f"at most {most} lines at a time (the read operation's limit); read the "
                    "next range after this one",
                    param_hint="--lines",
                )
        if path.lower().endswith(_DOCUMENTS):
            text = _document_text(path, session.ws.read_bytes(path), first, limit)
        elif line_range is not None:
            text = session.ws.read_text(path, offset=first - 1, limit=limit)
        else:
            text = session.ws.read_text(path)
        if options().as_json:
            emit({"path": path, "first_line": first, "text": text}, "")
        else:
            click.echo(text, nl=False)


@click.command("put")
@click.argument("path")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--create", is_flag=True, help="Refuse to replace an existing file.")
@click.option("--append", is_flag=True, help="Add to the end of the file.")
@declared_option("write", "if_version", "--if-version")
@declared_option("write", "backup", "--backup", help="Keep the previous content as PATH.bak.")
@click.option("--no-parents", is_flag=True, help="Refuse when the folder does not exist.")
@_NO_INDEX
@common_options()
def put_command(
    path: str,
    source: Any,
    create: bool,
    append: bool,
    if_version: str | None,
    backup: bool,
    no_parents: bool,
    no_index: bool,
) -> None:
    """Write SOURCE (a file, or - for stdin, the default) to the workspace file PATH."""
    if create and append:
        raise click.UsageError("give --create or --append, not both")
    data = source.read()
    mode = "create" if create else "append" if append else "overwrite"
    with _session(index=not no_index) as session:
        info = session.ws.write(
            path, data, mode=mode, parents=not no_parents, backup=backup, if_version=if_version
        )
        emit(info_dict(info), f"wrote {len(data)} bytes to {info.path}")


@click.command("rm")
@click.argument("path")
@declared_option(
    "delete", "recursive", "-r", "--recursive", help="Delete a folder and everything in it."
)
@_NO_INDEX
@common_options()
def rm_command(path: str, recursive: bool, no_index: bool) -> None:
    """Delete the file PATH (a folder with -r)."""
    with _session(index=not no_index) as session:
        session.ws.delete(path, recursive=recursive)
        emit({"deleted": path}, f"deleted {path}")


def _transfer(name: str, verb: str) -> click.Command:
    @click.command(name)
    @click.argument("source")
    @click.argument("target")
    @declared_option(
        "move" if name == "mv" else "copy",
        "overwrite",
        "-f",
        "--overwrite",
        help="Replace an existing target file.",
    )
    @_NO_INDEX
    @common_options()
    def command(source: str, target: str, overwrite: bool, no_index: bool) -> None:
        with _session(index=not no_index) as session:
            if name == "mv":
                info = session.ws.move(source, target, overwrite=overwrite)
            else:
                info = session.ws.copy(source, target, overwrite=overwrite)
            emit(
                {"source": source, **info_dict(info)},
                f"{verb} {source} to {info.path}",
            )

    action = "Move (or rename)" if name == "mv" else "Copy"
    command.help = f"{action} SOURCE to TARGET (a file or a folder); -f replaces a file."
    return command


mv_command = _transfer("mv", "moved")
cp_command = _transfer("cp", "copied")


@click.command("grep")
@click.argument("pattern")
@click.argument("path", default="/")
@declared_option("grep", "regex", "-E", "--regex", help="PATTERN is an RE2 regular expression.")
@declared_option("grep", "ignore_case", "-i", "--ignore-case")
@declared_option("grep", "context", "-C", "--context")
@declared_option("grep", "glob", "--glob", "name_glob", help="Only files matching this glob.")
@declared_option("grep", "max_total", "--max", "max_total")
@common_options()
def grep_command(
    pattern: str,
    path: str,
    regex: bool,
    ignore_case: bool,
    context: int,
    name_glob: str | None,
    max_total: int,
) -> int:
    """Lines matching PATTERN in the files under PATH (default /) that you may read. Exit
    status as grep's: 0 a line matched, 1 none did, 2 an error."""
    kwargs: dict[str, Any] = {
        "regex": regex,
        "ignore_case": ignore_case,
        "glob": name_glob,
        "max_total": max_total,
    }
    try:
        with _session() as session:
            result = session.ws.grep(pattern, path, context=context, **kwargs)
            for skipped in result.skipped:
                note(f"skipped {skipped}")
            session.say_limited(not result.matches)
            emit({"pattern": pattern, "path": path, **result.to_dict()}, result.format)
    except BastionError as exc:  # grep's convention: 2 for an error, 1 for no match
        raise CliError(str(exc), code=exc.code, exit_code=EXIT_USAGE, remedy=exc.remedy) from exc
    return EXIT_OK if result.matches else EXIT_ERROR


@click.command("glob")
@click.argument("pattern")
@declared_option("glob", "path", "--path", help="Where a relative PATTERN starts.")
@declared_option("glob", "limit", "--limit", help="At most this many entries.")
@common_options()
def glob_command(pattern: str, path: str, limit: int | None) -> None:
    """Entries matching the glob PATTERN (**/*.md) that you may see."""
    with _session() as session:
        entries = session.ws.glob(pattern, path=path, limit=limit)
        session.say_limited(not entries)
        emit(
            {"pattern": pattern, "entries": [info_dict(e) for e in entries]},
            lambda: "\n".join(str(e.path) for e in entries),
        )


FILE_COMMANDS = (
    ls_command,
    tree_command,
    stat_command,
    cat_command,
    put_command,
    rm_command,
    mv_command,
    cp_command,
    grep_command,
    glob_command,
)
