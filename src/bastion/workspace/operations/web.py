"""The web page's own operations: conversations (a governed ask kept as a file of the
principal's agent area), feedback on an answer, and the operator's "why can't X see this?"."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bastion.core.errors import (
    AccessDeniedError,
    ConfigurationError,
    ConflictError,
    InvalidPathError,
    NotFoundError,
    PolicyDeniedError,
    RateLimitError,
)
from bastion.workspace.operations.base import Operation, Params, Result, SearchModeName
from bastion.workspace.operations.knowledge import (
    MAX_K,
    MAX_QUESTION,
    Citation,
    NoParams,
    Verification,
)

__all__ = ["CONVERSATION_ID", "MAX_NOTE", "MAX_TURNS", "WEB_OPERATIONS"]

CONVERSATION_ID = r"^[0-9a-f]{16}$"
"""A conversation's id: 16 hexadecimal digits, chosen by the server."""
MAX_TURNS = 100
"""Most questions one conversation keeps (then a new conversation starts)."""
MAX_NOTE = 2000
"""Most characters of a feedback note."""

_ERRORS = (InvalidPathError, NotFoundError, AccessDeniedError, RateLimitError, ConfigurationError)
_ID = "A conversation's id (an answer's 'conversation')"


class ChatParams(Params):
    question: str = Field(min_length=1, max_length=MAX_QUESTION, description="The question")
    conversation: str | None = Field(
        None, pattern=CONVERSATION_ID, description="Its conversation's id; absent: a new one"
    )
    k: int = Field(8, ge=1, le=MAX_K, description="Chunks to retrieve")
    mode: SearchModeName | None = Field(None, description="Default: hybrid, or bm25")
    path: str = Field("/", description="Only documents under this directory")


class Turn(Result):
    question: str
    asked: str
    """The question as asked: after the conversation's previous question when it names
    nothing of its own to look for (a follow-up such as ``and by when?``)."""
    answer: str
    status: str
    citations: list[Citation]
    verification: Verification
    mode: str
    notes: list[str]
    time: float
    feedback: str | None = None


class ChatResult(Result):
    conversation: str
    turn: int
    kept: bool
    """False when the conversation could not be stored (the reason is in ``notes``)."""
    answer: str
    status: str
    citations: list[Citation]
    verification: Verification
    mode: str
    notes: list[str]
    asked: str


class ConversationSummary(Result):
    id: str
    title: str
    updated: float
    turns: int


class ConversationList(Result):
    conversations: list[ConversationSummary]


class ConversationParams(Params):
    conversation: str = Field(pattern=CONVERSATION_ID, description=_ID)


class Conversation(Result):
    id: str
    title: str
    created: float
    updated: float
    turns: list[Turn]


class Deleted(Result):
    conversation: str


class FeedbackParams(Params):
    conversation: str = Field(pattern=CONVERSATION_ID, description=_ID)
    turn: int = Field(ge=0, lt=MAX_TURNS, description="The answer's turn (0: the first)")
    rating: Literal["right", "wrong", "missing"] = Field(
        description="wrong answer, right one, or an answer missing"
    )
    note: str = Field("", max_length=MAX_NOTE, description="What was wrong or missing")


class FeedbackResult(Result):
    conversation: str
    turn: int
    rating: str
    stored: str
    """The workspace path of the file the feedback went into."""


class ExplainParams(Params):
    user: str = Field(min_length=1, max_length=128, description="A user of this server")
    path: str = Field(min_length=1, max_length=4096, description="The path asked about")
    action: str = Field("read", max_length=32, description="read, write, list, search...")


class ExplainMount(Result):
    prefix: str
    scope: str
    allows: bool


class ExplainRule(Result):
    allowed: bool
    reason: str
    number: int | None = None
    effect: str | None = None
    paths: list[str] | None = None
    roles: list[str] | None = None
    through: list[str] | None = None


class ExplainResult(Result):
    user: str
    clearance: str
    roles: list[str]
    effective_roles: list[str]
    path: str
    action: str
    allowed: bool
    decided_by: str
    mount: ExplainMount | None
    rule: ExplainRule | None = None
    labels: dict[str, object] | None = None
    label_source: str | None = None
    labels_admit: bool | None = None


WEB_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="chat",
        summary="Ask within a conversation kept in the principal's own area; "
        "Accept: text/event-stream streams events conversation, answer, citations, "
        "verification, done",
        params=ChatParams,
        result=ChatResult,
        errors=(*_ERRORS, ConflictError),
    ),
    Operation(
        name="conversations",
        summary="The principal's conversations, newest first",
        params=NoParams,
        result=ConversationList,
        errors=_ERRORS,
    ),
    Operation(
        name="conversation",
        summary="One of the principal's conversations, every turn",
        params=ConversationParams,
        result=Conversation,
        errors=_ERRORS,
    ),
    Operation(
        name="conversation_delete",
        summary="Delete one of the principal's conversations",
        params=ConversationParams,
        result=Deleted,
        errors=_ERRORS,
    ),
    Operation(
        name="feedback",
        summary="Rate an answer right, wrong or missing (kept for the answer evaluation)",
        params=FeedbackParams,
        result=FeedbackResult,
        errors=(*_ERRORS, ConflictError),
    ),
    Operation(
        name="explain",
        summary="Why a user may or may not do an action on a path: operators",
        params=ExplainParams,
        result=ExplainResult,
        errors=(PolicyDeniedError, NotFoundError, InvalidPathError),
    ),
)
