"""The knowledge operations: search, ask, ingest, and the index's status and repair."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigurationError,
    InvalidPathError,
    LabelError,
    NotFoundError,
    PolicyDeniedError,
    RateLimitError,
    StoreError,
    UnsupportedFileError,
)
from bastion.knowledge.index.filters import described
from bastion.workspace.operations.base import Operation, Params, Result, SearchModeName

__all__ = ["KNOWLEDGE_OPERATIONS", "MAX_K", "MAX_QUESTION"]

MAX_K = 100
"""Most hits one search returns, and most chunks one answer retrieves."""
MAX_QUESTION = 4000
"""Most characters of a question."""

_ERRORS = (InvalidPathError, NotFoundError, AccessDeniedError, RateLimitError, ConfigurationError)
_MODE = "Default: hybrid, or bm25 on a keyword-only index"
_UNDER = "Only under this directory"
_FILTER = described()


class SearchParams(Params):
    query: str = Field(min_length=1, description="What to look for")
    mode: SearchModeName | None = Field(None, description=_MODE)
    k: int = Field(10, ge=1, le=MAX_K, description="Most results")
    path: str = Field("/", description=_UNDER)
    filter: dict[str, Any] | None = Field(None, description=_FILTER)
    related: bool = Field(False, description="Add documents linked from the hits")


class SearchHit(Result):
    path: str
    lines: tuple[int, int]
    snippet: str
    score: float
    chunk_id: str
    section: str | None
    title: str | None


class SearchResult(Result):
    query: str
    mode: str
    hits: list[SearchHit]


class AskParams(Params):
    question: str = Field(min_length=1, max_length=MAX_QUESTION, description="The question")
    k: int = Field(8, ge=1, le=MAX_K, description="Chunks to retrieve")
    mode: SearchModeName | None = Field(None, description=_MODE)
    path: str = Field("/", description="Only documents under this directory")
    filter: dict[str, Any] | None = Field(None, description=_FILTER)
    budget_tokens: int = Field(2048, ge=16, le=32768, description="Tokens of context at most")


class Citation(Result):
    n: int
    path: str
    start_line: int = Field(description="First line of the text the answer took (1-based)")
    end_line: int = Field(description="Last line of the text the answer took (inclusive)")
    lines: tuple[int, int]


class Verification(Result):
    verified: bool
    verdict: str
    problems: list[str]


class AskResult(Result):
    answer: str
    status: str
    citations: list[Citation]
    verification: Verification
    mode: str
    notes: list[str]


class IngestParams(Params):
    path: str = Field(description="The folder to upload into")
    overwrite: bool = Field(False, description="Replace existing files")


class IngestedFile(Result):
    path: str
    size: int
    version: str | None


class IngestResult(Result):
    files: list[IngestedFile]
    indexed: bool


class NoParams(Params):
    """An operation that takes no parameter."""


class IndexStatus(Result):
    has_index: bool
    modes: list[str]
    job: dict[str, Any] | None = None


class RepairParams(Params):
    rebuild: bool = Field(False, description="Throw the index away and index everything")


class RepairResult(Result):
    job: dict[str, Any]


KNOWLEDGE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="search",
        summary="Search (bm25, vector, hybrid)",
        params=SearchParams,
        result=SearchResult,
        errors=_ERRORS,
        facade=("search",),
    ),
    Operation(
        name="ask",
        summary="A governed answer with citations; Accept: text/event-stream streams events "
        "answer, citations, verification, done",
        params=AskParams,
        result=AskResult,
        errors=_ERRORS,
        facade=("ask",),
    ),
    Operation(
        name="ingest",
        summary="Upload files (multipart: path, file...) into a folder; indexed before the answer",
        params=IngestParams,
        result=IngestResult,
        errors=(*_ERRORS, AlreadyExistsError, LabelError, UnsupportedFileError, StoreError),
    ),
    Operation(
        name="index_status",
        summary="Index modes; the repair job's progress for operators",
        params=NoParams,
        result=IndexStatus,
    ),
    Operation(
        name="index_repair",
        summary="Repair (or rebuild) the index: operators",
        params=RepairParams,
        result=RepairResult,
        errors=(PolicyDeniedError, ConfigurationError),
    ),
)
