"""Granular tools: one small tool per file operation (the shape of Claude Code's and the MCP
reference filesystem server's tools).

Each is a typed function; its docstring's first paragraph is what the model reads, so it is
short. Every call goes through the workspace and its guard: a tool that exists can still be
refused for a path the principal may not use.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from bastion.agents.tools.outputs import fail, fit_items, fit_text, ok, one_line
from bastion.agents.tools.session import ToolSession, split_lines
from bastion.agents.tools.spec import Capability, Output, Tool, tool
from bastion.core.errors import ConfigurationError
from bastion.core.models import EntryKind, FileInfo
from bastion.core.paths import VPath
from bastion.workspace.operations import DECLARED

if TYPE_CHECKING:
    from bastion.governance.answer.models import Answer

__all__ = [
    "GRANULAR_TOOLS",
    "ask",
    "copy",
    "delete",
    "edit_file",
    "glob",
    "grep",
    "list_files",
    "mkdir",
    "move",
    "read_file",
    "search",
    "stat",
    "write_file",
]

R, W, D, L, S = (
    Capability.READ,
    Capability.WRITE,
    Capability.DELETE,
    Capability.LIST,
    Capability.SEARCH,
)


_GLOB_CAP = 10_000
_GREP_CAP = 2_000
_SNIPPET = 300


# -- reading ---------------------------------------------------------------------------------


@tool(needs={R}, operation="read")
async def read_file(
    s: ToolSession, path: str, offset: int = DECLARED, limit: int | None = DECLARED
) -> Output:
    """Read a text file as numbered lines. A long file comes in pages: call again with
    offset=next_offset to go on.

    The numbered page of ``path`` (a file, or a scratch result): what both read tools
    return (``access`` calls it as :func:`read_page`)."""
    count = limit or s.limits.read_lines
    text: str | None = None
    rows: Sequence[str]
    if s.scratch.owns(path):
        vp = VPath.parse(path)
        everything = split_lines(s.scratch.get(path))
        begin = max(len(everything) + offset, 0) if offset < 0 else offset
        lines, more = everything[begin : begin + count], len(everything) > begin + count
        rows = [line[:-1] if line.endswith("\n") else line for line in lines]
        if offset < 0:
            offset = begin - len(everything)
    else:
        page = await s.read_page(path, offset, count)  # the one parse, route, guard and read
        vp, text, more = page.info.path, page.text, page.more
        if page.from_end is not None:
            offset = page.from_end  # numbered from the end: -3, -2, -1
        if "\x00" in text:
            return fail(f"{vp} is a binary file; it cannot be shown as text")
        rows = page.rows
    if not rows and offset > 0:
        return fail(f"{vp}: offset {offset} is past the end of the file; read from offset 0")
    return {"success": True, "path": str(vp), **_numbered(rows, offset, more, s, text)}


read_page: Callable[[ToolSession, str | VPath, int, int | None], Awaitable[Output]] = read_file.fn
"""The numbered page of a path: the read tool's own function (one coroutine, no wrapper)."""


def _numbered(
    rows: Sequence[str], offset: int, more: bool, s: ToolSession, text: str | None = None
) -> dict[str, Any]:
    """``cat -n`` style lines (``rows``: the lines without their ``\\n``; ``text``: the
    same lines joined by ``\\n``, with or without a last ``\\n``, when the caller has it)
    within the character cap, and where to resume. Line by line only where a line is cut
    or the cap is reached; else a few calls over the whole page."""
    cap, width = s.limits.max_chars, s.limits.max_line_chars
    if text is None:
        text = "\n".join(rows)
    # Characters in the rows: the text less its newlines (one between two rows, and a last).
    total: int | None = len(text) - len(rows) + 1 - text.endswith("\n") if rows else 0
    if "\r" in text:
        rows, total = [row.rstrip("\r") for row in rows], None
    if rows and _may_be_longer(text, width) and max(map(len, rows)) > width:
        rows, total = [_cut(row, width) for row in rows], None
    if total is None:
        total = sum(map(len, rows))
    first = offset + 1 if offset >= 0 else offset  # from the end: -3, -2, -1
    shown = len(rows)
    if first + shown > _NUMBER_WIDTH_LIMIT or total + 8 * shown > cap:
        shown = _fitting(rows, first, cap)
    if not shown:
        content = ""
    elif first > 0 and first + shown <= _COLUMN:
        # Numbers and lines interleaved in one list, joined once: no string per line made.
        parts: list[str] = [""] * (2 * shown)
        parts[0::2] = _number_column()[first : first + shown]
        parts[1::2] = rows if shown == len(rows) else rows[:shown]
        parts[0] = parts[0][1:]
        content = "".join(parts)
    else:
        content = "\n".join(map("{:>6}\t{}".format, range(first, first + shown), rows))
    if shown < len(rows) or more:
        resume = offset + shown
        return {
            "content": f"{content}\n[... more lines: call again with offset={resume}]",
            "next_offset": resume,
        }
    return {"content": content}


def _may_be_longer(text: str, width: int) -> bool:
    """False when no line of ``text`` is longer than ``width`` characters, known from a few
    ``str.find`` calls (in C): a line of ``2 * half - 1`` characters or more holds a whole
    window ``[k * half, (k + 1) * half)`` with no newline, so when every whole window has one,
    no line reaches ``width``. True when it cannot be told that way (then measure)."""
    if len(text) <= width:
        return False
    half = (width + 1) // 2
    if half < 64:
        return True
    find = text.find
    for start in range(0, len(text) - half + 1, half):
        if find("\n", start, start + half) < 0:
            return True
    return False


_COLUMN = 10_000
"""Line numbers whose column (a newline, ``{:>6}`` and a tab) is made once and kept."""


@functools.cache
def _number_column() -> tuple[str, ...]:
    """The numbers column of lines 0 to ``_COLUMN - 1``, each after the newline that ends
    the line before, made on first use (about 0.7 MB): joining kept strings is several times
    faster than formatting each line's number."""
    return tuple(f"\n{n:>6}\t" for n in range(_COLUMN))


_NUMBER_WIDTH_LIMIT = 1_000_000
"""Line numbers below this take the six columns of ``{:>6}``."""


def _cut(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]} [... line cut: {len(line) - width} more characters]"


def _fitting(rows: Sequence[str], first: int, cap: int) -> int:
    """How many numbered rows fit in ``cap`` characters (at least one)."""
    size = 0
    for i, row in enumerate(rows):
        numbered = len(f"{first + i:>6}\t") + len(row) + 1
        if i and size + numbered > cap:
            return i
        size += numbered
    return len(rows)


@tool(needs={R}, operation="stat")
async def stat(s: ToolSession, path: str) -> Output:
    """Kind, size and modification time of a file or directory."""
    info = await s.workspace.stat(path)
    return ok(**describe(info))


def describe(info: FileInfo) -> dict[str, Any]:
    """The flat fields of an entry's metadata."""
    fields: dict[str, Any] = {"path": str(info.path), "kind": info.kind.value}
    if info.is_file:
        fields["size"] = info.size
    if info.mtime:
        fields["modified"] = iso(info.mtime)
    return fields


def iso(mtime: float) -> str:
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# -- listing and finding ---------------------------------------------------------------------


@tool(needs={L}, operation="list", presets={"depth"})
async def list_files(s: ToolSession, path: str = DECLARED, depth: int = 2) -> Output:
    """List a directory as a compact tree (directories end in /, files show their size)."""
    vp = VPath.parse(path)
    entries = await s.workspace.list(vp, recursive=True, depth=depth)
    lines = [str(vp) if vp.is_root else f"{vp}/"]
    base = len(vp.parts)  # every entry is below ``vp``: its depth there is the indent
    directory = EntryKind.DIRECTORY
    for entry in entries:
        parts = entry.path.parts
        indent = _INDENTS[len(parts) - base]
        if entry.kind is directory:
            lines.append(f"{indent}{parts[-1]}/")
        else:
            size = entry.size
            shown = f"{size} B" if size < 1024 else human_size(size)
            lines.append(f"{indent}{parts[-1]} ({shown})")
    text = "\n".join(lines)
    hint = "list a subdirectory or use less depth"
    shaped = fit_text(
        text, tool="list_files", limits=s.limits, scratch=s.scratch, hint=hint, key="tree"
    )
    return ok(path=str(vp), total_found=len(entries), **shaped)


class _Indents(dict[int, str]):
    """``"  " * depth``, made once per depth."""

    def __missing__(self, depth: int) -> str:
        self[depth] = indent = "  " * depth
        return indent


_INDENTS = _Indents()


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@tool(needs={L}, operation="glob")
async def glob(s: ToolSession, pattern: str, path: str = DECLARED) -> Output:
    """Find files and directories whose path matches a glob pattern."""
    found = await s.workspace.glob(pattern, path=path, limit=_GLOB_CAP)
    files = [f"{e.path}/" if e.is_dir else str(e.path) for e in found]
    shaped = fit_items(files, str, tool="glob", limits=s.limits, scratch=s.scratch, key="files")
    return ok(total_found=len(files), **shaped)


@tool(needs={R, L}, operation="grep")
async def grep(
    s: ToolSession,
    pattern: str,
    path: str = DECLARED,
    glob: str | None = DECLARED,
    ignore_case: bool = DECLARED,
    regex: bool = DECLARED,
    context: int = DECLARED,
) -> Output:
    """Find lines in files, as path:line: text."""
    result = await s.workspace.grep(
        pattern,
        path,
        regex=regex,
        ignore_case=ignore_case,
        context=context,
        glob=glob,
        max_per_file=_GREP_CAP,
        max_total=_GREP_CAP,
    )
    hint = "narrow the pattern, the path or the glob"
    text = result.format()
    shaped = fit_text(text, tool="grep", limits=s.limits, scratch=s.scratch, hint=hint)
    matches = sum(1 for m in result.matches if not m.is_context)
    skipped = list(result.skipped[:20]) or None
    return ok(total_found=matches, files_matched=result.files_matched, skipped=skipped, **shaped)


# -- writing ---------------------------------------------------------------------------------


@tool(needs={W}, changes=True, operation="write")
async def write_file(s: ToolSession, path: str, content: str) -> Output:
    """Create a file, or replace one you have read (parent directories are created)."""
    info, created = await s.write(VPath.parse(path), content)
    return ok(path=str(info.path), size=info.size, created=created)


@tool(
    needs={R, W},
    changes=True,
    operation="edit",
    renames={"old_string": "old", "new_string": "new"},
)
async def edit_file(
    s: ToolSession, path: str, old_string: str, new_string: str, replace_all: bool = DECLARED
) -> Output:
    """Replace exact text in a file you have read; old_string must occur once unless
    replace_all."""
    result = await s.edit(VPath.parse(path), old_string, new_string, replace_all=replace_all)
    return ok(path=result.path, replacements=result.replacements)


@tool(needs={W}, changes=True, operation="mkdir")
async def mkdir(s: ToolSession, path: str) -> Output:
    """Create a directory and its missing parents."""
    vp = VPath.parse(path)
    await s.workspace.mkdir(vp)
    return ok(path=str(vp))


@tool(needs={D}, changes=True, trees=True, operation="delete")
async def delete(s: ToolSession, path: str, recursive: bool = DECLARED) -> Output:
    """Delete a file you have read, or an empty directory (a whole tree with recursive=true,
    once you have read every file in it)."""
    vp = VPath.parse(path)
    await s.delete(vp, recursive=recursive)
    return ok(path=str(vp))


@tool(needs={R, W, D}, same_mount=False, changes=True, trees=True, operation="move")
async def move(
    s: ToolSession,
    src: Annotated[str, Field(description="Path to move")],
    dst: Annotated[str, Field(description="New path")],
    overwrite: bool = DECLARED,
) -> Output:
    """Move or rename a file or directory."""
    info = await s.transfer(VPath.parse(src), VPath.parse(dst), move=True, overwrite=overwrite)
    return ok(path=str(info.path))


@tool(needs={R, W}, same_mount=False, changes=True, trees=True, operation="copy")
async def copy(
    s: ToolSession,
    src: Annotated[str, Field(description="Path to copy")],
    dst: Annotated[str, Field(description="Path of the copy")],
    overwrite: bool = DECLARED,
) -> Output:
    """Copy a file or a directory tree."""
    info = await s.transfer(VPath.parse(src), VPath.parse(dst), move=False, overwrite=overwrite)
    return ok(path=str(info.path))


# -- knowledge -------------------------------------------------------------------------------


@tool(needs={S}, operation="search")
async def search(
    s: ToolSession,
    query: str,
    k: int = DECLARED,
    path: str = DECLARED,
    mode: str | None = DECLARED,
    related: bool = DECLARED,
) -> Output:
    """Search the indexed documents by meaning and keywords; hits give path, lines and a
    snippet."""
    result = await s.workspace.search(query, mode=mode, k=k, path=path, related=related)
    hits = [hit_fields(hit) for hit in result.hits]
    shaped = fit_items(
        hits,
        lambda h: f"{h['path']}:{h['lines']} {h['snippet']}",
        tool="search",
        limits=s.limits,
        scratch=s.scratch,
        key="hits",
    )
    return ok(total_found=len(hits), **shaped)


def hit_fields(hit: Any) -> dict[str, Any]:
    """One search hit as a small flat record."""
    fields: dict[str, Any] = {
        "path": hit.path,
        "lines": f"{hit.start_line}-{hit.end_line}",
        "score": round(float(hit.score), 3),
        "snippet": one_line(hit.snippet, _SNIPPET),
    }
    if hit.section:
        fields["section"] = hit.section
    if hit.related_to:
        fields["related_to"] = hit.related_to
    return fields


@tool(needs={Capability.ASK}, operation="ask")
async def ask(s: ToolSession, question: str, path: str = DECLARED) -> Output:
    """Answer a question from the documents you may read; [n] in the answer refer to the
    citations (path:lines)."""
    answer_fn = getattr(s.workspace, "ask", None)
    if answer_fn is None:
        raise ConfigurationError("this workspace cannot answer questions")
    answer = await answer_fn(question, path=path)
    return ok(**answer_fields(answer))


def answer_fields(answer: Answer) -> dict[str, Any]:
    """A governed answer as flat fields: the text with [n] references, the status, whether
    it was verified, and the citations as ``[n] path:lines``."""
    from bastion.governance.answer.text import number_markers

    numbers = {c.chunk_id: i for i, c in enumerate(answer.citations, start=1)}
    return {
        "answer": number_markers(answer.answer, numbers),
        "status": answer.status.value,
        "verified": answer.verified,
        "citations": [f"[{numbers[c.chunk_id]}] {c.path}:{c.lines}" for c in answer.citations],
    }


GRANULAR_TOOLS: tuple[Tool, ...] = (
    read_file,
    write_file,
    edit_file,
    list_files,
    glob,
    grep,
    stat,
    mkdir,
    delete,
    move,
    copy,
    search,
    ask,
)
"""The granular tool set, in the order a model sees it."""
