"""The file operations: stat, read, list, glob, grep, write, edit, move, copy, delete, mkdir."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConflictError,
    DirectoryNotEmptyError,
    EditError,
    InvalidPathError,
    InvalidPatternError,
    IsADirectoryError_,
    LabelError,
    NotADirectoryError_,
    NotFoundError,
    RateLimitError,
    StoreError,
    UnsupportedFileError,
)
from bastion.workspace.operations.base import Operation, Params, Result

__all__ = ["FILE_OPERATIONS", "Entry"]

MAX_ENTRIES = 10_000
"""Most entries one listing, glob or grep answer holds."""

_PATH = "Absolute path, e.g. /docs/a.md"
_DIR = "Directory to start from"

_READ_ERRORS = (
    InvalidPathError,
    NotFoundError,
    AccessDeniedError,
    RateLimitError,
    LabelError,
    UnsupportedFileError,
    StoreError,
)
_WRITE_ERRORS = (*_READ_ERRORS, AlreadyExistsError, ConflictError, NotADirectoryError_)


class Entry(Result):
    """One entry: workspace path, kind, size, time, version (never a store path)."""

    path: str
    kind: str
    size: int
    mtime: float
    version: str | None = None


class EntryLabels(Result):
    """A document's effective labels: those the guard decides on (shown to who may see it)."""

    tenant: str | None
    classification: str
    roles: list[str]
    tags: list[str]


class StatResult(Entry):
    """An entry and, for a file, its labels (``None``: the mount's defaults apply)."""

    labels: EntryLabels | None = None


# -- reading ---------------------------------------------------------------------------------


class StatParams(Params):
    path: str = Field(description=_PATH)


MAX_TAIL_LINES = 1_000_000
"""The most lines a read may start before the end of a file (``offset=-1_000_000``)."""


class ReadParams(Params):
    path: str = Field(description=_PATH)
    offset: int = Field(0, ge=-MAX_TAIL_LINES, description="Lines to skip (<0: from end)")
    limit: int | None = Field(None, ge=1, le=5000, description="Most lines to return")
    start: int | None = Field(None, ge=0, description="bytes: first byte")
    end: int | None = Field(None, ge=0, description="bytes: the byte after the last")
    format: Literal["text", "bytes", "document"] = Field(
        "text", description="text (lines), bytes, or document (PDF/DOCX text)"
    )


class ReadResult(Result):
    path: str
    offset: int
    content: str


class ListParams(Params):
    path: str = Field("/", description="Directory to list")
    recursive: bool = Field(False, description="The whole tree below it")
    depth: int | None = Field(None, ge=1, le=64, description="Levels to show")


class ListResult(Result):
    entries: list[Entry]
    truncated: bool


class GlobParams(Params):
    pattern: str = Field(min_length=1, description="Glob, e.g. **/*.md")
    path: str = Field("/", description=_DIR)
    limit: int | None = Field(None, ge=1, le=MAX_ENTRIES, description="Most entries")


class GlobResult(Result):
    entries: list[Entry]


class GrepParams(Params):
    pattern: str = Field(min_length=1, description="Text to find (a regex with regex=true)")
    path: str = Field("/", description="File or directory to search")
    regex: bool = Field(False, description="Pattern is an RE2 regular expression")
    ignore_case: bool = Field(False, description="Match upper and lower case alike")
    context: int = Field(0, ge=0, le=20, description="Lines around each match")
    glob: str | None = Field(None, description="Only files matching, e.g. *.py")
    max_total: int = Field(1000, ge=1, le=MAX_ENTRIES, description="Most matching lines")


class GrepMatch(Result):
    path: str
    line: int
    text: str
    context: bool


class GrepResult(Result):
    matches: list[GrepMatch]
    files_searched: int
    files_matched: int
    truncated: bool
    budget_exhausted: bool
    skipped: list[str]


# -- changing --------------------------------------------------------------------------------


class WriteParams(Params):
    path: str = Field(description=_PATH)
    content: str = Field(description="The whole new content")
    mode: Literal["overwrite", "create", "append"] = Field(
        "overwrite", description="create refuses an existing file"
    )
    if_version: str | None = Field(None, description="Refuse unless the file is at this version")
    backup: bool = Field(False, description="Keep the old content as NAME.bak")
    parents: bool = Field(True, description="Create missing parent directories")


class EditParams(Params):
    path: str = Field(description=_PATH)
    old: str = Field(min_length=1, description="Exact text to replace")
    new: str = Field(description="Replacement text")
    replace_all: bool = Field(False, description="Replace every occurrence")
    if_version: str | None = Field(None, description="Refuse unless the file is at this version")


class EditResult(Result):
    path: str
    replacements: int
    version: str | None


class TransferParams(Params):
    src: str = Field(description="Path to move or copy")
    dst: str = Field(description="New path")
    overwrite: bool = Field(False, description="Replace an existing file")


class DeleteParams(Params):
    path: str = Field(description=_PATH)
    recursive: bool = Field(False, description="Delete a directory and its content")


class DeleteResult(Result):
    path: str
    deleted: bool


class MkdirParams(Params):
    path: str = Field(description=_PATH)
    parents: bool = Field(True, description="Create missing parents")
    exist_ok: bool = Field(True, description="An existing directory is no error")


class MkdirResult(Result):
    path: str
    created: bool


FILE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="stat",
        summary="Size, kind, time and version of an entry",
        params=StatParams,
        result=StatResult,
        errors=_READ_ERRORS,
        facade=("stat",),
    ),
    Operation(
        name="read",
        summary="Read lines (offset/limit: JSON) or bytes (start/end or format=bytes)",
        params=ReadParams,
        result=ReadResult,
        errors=(*_READ_ERRORS, IsADirectoryError_),
        facade=("read_text", "read_lines", "read_bytes"),
        edge_only=frozenset({"format"}),
    ),
    Operation(
        name="list",
        summary="List a directory",
        params=ListParams,
        result=ListResult,
        errors=(*_READ_ERRORS, NotADirectoryError_),
        facade=("list",),
    ),
    Operation(
        name="glob",
        summary="Entries matching a glob",
        params=GlobParams,
        result=GlobResult,
        errors=(*_READ_ERRORS, InvalidPatternError),
        facade=("glob",),
    ),
    Operation(
        name="grep",
        summary="Matching lines",
        params=GrepParams,
        result=GrepResult,
        errors=(*_READ_ERRORS, InvalidPatternError),
        facade=("grep",),
    ),
    Operation(
        name="write",
        summary="Create, overwrite or append; if_version makes it conditional",
        params=WriteParams,
        result=Entry,
        errors=(*_WRITE_ERRORS, IsADirectoryError_),
        facade=("write",),
    ),
    Operation(
        name="edit",
        summary="Replace exact text",
        params=EditParams,
        result=EditResult,
        errors=(*_WRITE_ERRORS, EditError, IsADirectoryError_),
        facade=("edit",),
    ),
    Operation(
        name="move",
        summary="Move or rename",
        params=TransferParams,
        result=Entry,
        errors=(*_WRITE_ERRORS, DirectoryNotEmptyError),
        facade=("move",),
    ),
    Operation(
        name="copy",
        summary="Copy a file or a directory tree",
        params=TransferParams,
        result=Entry,
        errors=_WRITE_ERRORS,
        facade=("copy",),
    ),
    Operation(
        name="delete",
        summary="Delete a file, or a directory (a whole tree with recursive)",
        params=DeleteParams,
        result=DeleteResult,
        errors=(*_READ_ERRORS, DirectoryNotEmptyError),
        facade=("delete",),
    ),
    Operation(
        name="mkdir",
        summary="Make a directory",
        params=MkdirParams,
        result=MkdirResult,
        errors=_WRITE_ERRORS,
        facade=("mkdir",),
    ),
)
