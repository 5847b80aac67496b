"""Intent tools: three rich tools instead of a dozen small ones (PackFS's style), for
frameworks and models that do better with fewer choices.

* ``access``: read a file, its metadata, or whether it exists;
* ``discover``: list a tree, search file contents, or search by meaning (optionally following
  relations), filtered by extension, modification dates and size;
* ``update``: create, update, append to or delete a file.

Which operations each tool offers follows what the principal may do (and the permission list
given to the tool set): an operation that cannot be served is not in the schema, and a tool
with none left does not exist. Outputs are flat, like the granular tools' (PackFS found that
nesting results under ``data`` made models miss them).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field

from bastion.agents.tools.granular import describe, hit_fields, read_page
from bastion.agents.tools.outputs import fail, fit_items, fit_text, ok
from bastion.agents.tools.session import ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool, tool
from bastion.core.audit import on_behalf
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.workspace.operations import DECLARED

__all__ = ["INTENT_TOOLS", "access", "discover", "update"]

R, W, D, L, S = (
    Capability.READ,
    Capability.WRITE,
    Capability.DELETE,
    Capability.LIST,
    Capability.SEARCH,
)

_SCAN_CAP = 10_000


@tool(
    choices={"operation": {"read": {R}, "metadata": {R}, "exists": {R}}},
    derive={"path": "read.path", "offset": "read.offset", "limit": "read.limit"},
)
async def access(
    s: ToolSession,
    path: str,
    operation: Literal["read", "metadata", "exists"] = "read",
    offset: Annotated[int, Field(description="read: lines to skip")] = DECLARED,
    limit: Annotated[int | None, Field(description="read: most lines")] = DECLARED,
) -> Output:
    """Read a file as numbered lines (page with offset=next_offset), get its metadata, or
    check that it exists."""
    if operation == "read":
        return await read_page(s, path, offset, limit)
    if operation == "metadata":
        return ok(**describe(await s.workspace.stat(path)))
    return ok(path=str(VPath.parse(path)), exists=await s.workspace.exists(path))


@tool(
    choices={
        "operation": {"list": {L}, "search_content": {R, L}, "search_semantic": {S}},
    },
    derive={"path": "list.path", "depth": "list.depth", "k": "search.k"},
)
async def discover(
    s: ToolSession,
    operation: Literal["list", "search_content", "search_semantic"] = "list",
    path: Annotated[str, Field(description="Directory to look in")] = "/",
    query: Annotated[str | None, Field(description="search: text or question")] = None,
    extension: Annotated[str | None, Field(description="Only files ending so, e.g. .md")] = None,
    modified_after: datetime | None = None,
    modified_before: datetime | None = None,
    min_size: Annotated[int | None, Field(ge=0, description="Bytes")] = None,
    max_size: Annotated[int | None, Field(ge=0, description="Bytes")] = None,
    depth: Annotated[int | None, Field(description="list: levels")] = DECLARED,
    follow_relations: Annotated[bool, Field(description="semantic: add linked docs")] = False,
    k: Annotated[int, Field(description="semantic: most hits")] = DECLARED,
) -> Output:
    """Find files: list a tree, search their content for text, or search by meaning; filter
    by extension, modification dates and size."""
    keep = _criteria(extension, modified_after, modified_before, min_size, max_size)
    filtered = keep is not None
    if operation == "list":
        entries = await s.workspace.list(path, recursive=True, depth=depth)
        files = [
            f"{e.path}/" if e.is_dir else str(e.path)
            for e in entries
            if (e.is_file and (keep is None or keep(e))) or (e.is_dir and not filtered)
        ]
        shaped = fit_items(
            files, str, tool="discover", limits=s.limits, scratch=s.scratch, key="files"
        )
        return ok(total_found=len(files), **shaped)
    if not query:
        return fail(f"{operation} needs a query; give the text to find")
    if operation == "search_content":
        return await _search_content(s, query, path, extension, keep)
    return await _search_semantic(s, query, path, k, follow_relations, keep)


async def _search_content(
    s: ToolSession,
    query: str,
    path: str,
    extension: str | None,
    keep: Callable[[FileInfo], bool] | None,
) -> Output:
    ext = _extension(extension)
    result = await s.workspace.grep(query, path, ignore_case=True, glob=f"*{ext}" if ext else None)
    matched = list(dict.fromkeys(m.path for m in result.matches))
    if keep is not None:
        with on_behalf():  # checks of the hits, not the agent's requests
            matched = [p for p in matched if keep(await s.workspace.stat(p))]
    wanted = set(matched)
    lines = [m.format() for m in result.matches if m.path in wanted]
    if result.truncated:
        lines.append("[... more matches not shown: narrow the query or the path]")
    hint = "narrow the query or the path"
    shaped = fit_text(
        "\n".join(lines), tool="discover", limits=s.limits, scratch=s.scratch, hint=hint
    )
    return ok(files=matched, total_found=len(matched), **shaped)


async def _search_semantic(
    s: ToolSession,
    query: str,
    path: str,
    k: int,
    related: bool,
    keep: Callable[[FileInfo], bool] | None,
) -> Output:
    result = await s.workspace.search(query, k=k, path=path, related=related)
    hits = []
    with on_behalf():  # checks of the hits, not the agent's requests
        for hit in result.hits:
            if keep is not None and not keep(await s.workspace.stat(hit.path)):
                continue
            hits.append(hit_fields(hit))
    return ok(hits=hits, total_found=len(hits))


def _extension(extension: str | None) -> str:
    if not extension:
        return ""
    ext = extension.strip().lower()
    return ext if ext.startswith(".") else f".{ext}"


def _criteria(
    extension: str | None,
    after: datetime | None,
    before: datetime | None,
    min_size: int | None,
    max_size: int | None,
) -> Callable[[FileInfo], bool] | None:
    """A test of one file against the criteria, or ``None`` when there are none."""
    ext = _extension(extension)
    lo = None if after is None else _utc(after)
    hi = None if before is None else _utc(before)
    if not ext and lo is None and hi is None and min_size is None and max_size is None:
        return None

    def keep(info: FileInfo) -> bool:
        if not info.is_file:
            return False
        if ext and not info.path.name.lower().endswith(ext):
            return False
        if lo is not None and info.mtime < lo:
            return False
        if hi is not None and info.mtime > hi:
            return False
        if min_size is not None and info.size < min_size:
            return False
        return max_size is None or info.size <= max_size

    return keep


def _utc(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@tool(
    choices={"operation": {"create": {W}, "update": {W}, "append": {W}, "delete": {D}}},
    changes=True,
    derive={"path": "write.path", "backup": "write.backup"},
)
async def update(
    s: ToolSession,
    path: Annotated[str, Field(description="Absolute path of the file")],
    operation: Literal["create", "update", "append", "delete"],
    content: Annotated[str | None, Field(description="create, update, append: the text")] = None,
    create_parents: bool = True,
    backup: Annotated[bool, Field(description="update: keep the old file as NAME.bak")] = DECLARED,
) -> Output:
    """Create a file, replace one you have read (update), append to one, or delete one.
    Every write is atomic: readers see the old or the new file, never a mix."""
    vp = VPath.parse(path)
    if operation == "delete":
        await s.delete(vp, recursive=False)
        return ok(path=str(vp))
    if content is None:
        return fail(f"{operation} needs content; give the text to write")
    if operation == "append":
        info = await s.append(vp, content, parents=create_parents)
        return ok(path=str(vp), size=info.size)
    info, created = await s.write(
        vp,
        content,
        create_only=operation == "create",
        parents=create_parents,
        backup=backup,
    )
    return ok(path=str(vp), size=info.size, created=created)


INTENT_TOOLS: tuple[Tool, ...] = (access, discover, update)
"""The intent tool set."""
