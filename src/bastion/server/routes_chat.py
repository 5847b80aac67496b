"""The page's chat: ``/v1/chat`` (a governed ask within a conversation, JSON or Server-Sent
Events), the principal's conversations, and feedback on an answer.

A conversation is a file of the principal's own area (:mod:`bastion.server.conversations`):
the question is asked through the principal's view of the workspace (``Workspace.ask``: the
guard, the access filter and the answer workflow are the ask's own), then the turn is written
to the conversation through the area's workspace. A follow-up that names nothing of its own
to look for (``and by when?``) is asked after the conversation's previous question, which is
the principal's own words: the library's ask takes one question, so the earlier turn is its
context.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bastion.core.errors import BastionError, ConflictError, NotFoundError
from bastion.governance.answer.evidence import question_parts
from bastion.server.conversations import ConversationBook, missing, new_conversation
from bastion.server.errors import ApiError, describe
from bastion.server.handlers import Endpoint, endpoint, ok
from bastion.server.routes_knowledge import answer_parts, sse_event
from bastion.server.state import state_of
from bastion.workspace.operations.knowledge import MAX_QUESTION
from bastion.workspace.operations.web import (
    MAX_TURNS,
    ChatParams,
    ConversationParams,
    FeedbackParams,
)

if TYPE_CHECKING:
    from bastion.workspace import Workspace

__all__ = ["ENDPOINTS", "routes"]

_PIECE = 8


def book_of(request: Request) -> ConversationBook:
    book: ConversationBook | None = getattr(request.app.state, "conversations", None)
    if book is None:
        raise ApiError(404, "not_found", "this server keeps no conversations")
    return book


async def _opened(book: ConversationBook, own: Any, conversation: str) -> tuple[Any, str | None]:
    try:
        return await book.load(own, conversation)
    except (NotFoundError, ValueError):
        raise missing(conversation) from None


def _question(question: str, earlier: list[Any]) -> str:
    """The question to ask: ``question`` itself, or the previous one followed by it when it
    names nothing of its own to look for (``and by when?``). The answer workflow's own
    splitting decides (:func:`question_parts`: a part without a topic term of its own stays
    with the part before it)."""
    if not earlier:
        return question
    before = str(earlier[-1]["asked"])
    joined = f"{before} {question}"
    if len(joined) > MAX_QUESTION:
        return question
    return joined if len(question_parts(joined)) == len(question_parts(before)) else question


async def _answer(
    ws: Workspace,
    book: ConversationBook,
    own: Workspace,
    args: ChatParams,
    data: dict[str, Any],
    version: str | None,
) -> dict[str, Any]:
    """Ask, then keep the turn in the conversation (``kept`` false, with a note, when it
    cannot be written)."""
    turn, now = len(data["turns"]), time.time()
    asked = _question(args.question, data["turns"])
    answered = await ws.ask(asked, k=args.k, mode=args.mode, path=args.path)
    parts = answer_parts(answered)
    data["turns"].append(
        {"question": args.question, "asked": asked, "time": now, "feedback": None}
        | {k: parts[k] for k in ("answer", "status", "citations", "verification")}
        | {"mode": parts["mode"], "notes": parts["notes"]}
    )
    data["updated"] = now
    kept, notes = True, list(parts["notes"])
    try:
        await book.save(own, data, version)
    except ConflictError:
        kept = False
        notes.append("not kept: the conversation changed meanwhile (another window?)")
    except BastionError as exc:
        kept = False
        notes.append(f"not kept: {describe(exc)[2]}")
    told: dict[str, Any] = {"conversation": data["id"], "turn": turn, "kept": kept}
    return {**parts, **told, "notes": notes, "asked": asked}


@endpoint("chat", "POST", "/v1/chat")
async def chat(request: Request, args: ChatParams) -> Response:
    """The answer as JSON, or as events when the client accepts ``text/event-stream``:
    ``conversation`` (its id and the turn), ``answer`` (pieces of text), ``citations``,
    ``verification`` and ``done`` (whether the turn was kept, notes, the question asked)."""
    state = state_of(request)
    ws = state.view(request)
    book = book_of(request)
    own = book.workspace(ws.principal, ws.policy)
    if args.conversation is None:
        await book.start(own)  # a principal keeps a bounded number of conversations
        data, version = new_conversation(args.question, time.time()), None
    else:
        data, version = await _opened(book, own, args.conversation)
    if len(data["turns"]) >= MAX_TURNS:
        raise ConflictError(f"a conversation keeps {MAX_TURNS} questions; start a new one")
    turn = len(data["turns"])

    async def answer() -> dict[str, Any]:
        return await _answer(ws, book, own, args, data, version)

    if "text/event-stream" not in request.headers.get("accept", ""):
        return ok(await answer())

    async def events() -> AsyncIterator[bytes]:
        yield sse_event("conversation", {"conversation": data["id"], "turn": turn})
        yield sse_event("status", {"stage": "retrieving"})
        try:
            parts = await answer()
        except Exception as exc:  # noqa: BLE001 - the error is the stream's last event
            status, code, message = describe(exc)
            yield sse_event("error", {"status": status, "code": code, "message": message})
            return
        words = parts["answer"].split(" ")
        for start in range(0, len(words), _PIECE):
            piece = " ".join(words[start : start + _PIECE])
            more = " " if start + _PIECE < len(words) else ""
            yield sse_event("answer", {"text": piece + more})
            await asyncio.sleep(0)
        yield sse_event("citations", {"citations": parts["citations"]})
        yield sse_event("verification", parts["verification"] | {"status": parts["status"]})
        done = {k: parts[k] for k in ("mode", "notes", "kept", "asked")}
        yield sse_event("done", done)

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )


@endpoint("conversations", "GET", "/v1/conversations")
async def conversations(request: Request, _: object) -> Response:
    ws = state_of(request).view(request)
    book = book_of(request)
    own = book.workspace(ws.principal, ws.policy)
    return ok({"conversations": await book.summaries(own)})


@endpoint("conversation", "GET", "/v1/conversations/read")
async def conversation(request: Request, args: ConversationParams) -> Response:
    """Every turn, each answer as the principal may read it now: one citing a document it
    may no longer read is withheld (``ConversationBook.read``)."""
    ws = state_of(request).view(request)
    book = book_of(request)
    data = await book.read(ws, book.workspace(ws.principal, ws.policy), args.conversation)
    return ok({k: data[k] for k in ("id", "title", "created", "updated", "turns")})


@endpoint("conversation_delete", "POST", "/v1/conversations/delete")
async def conversation_delete(request: Request, args: ConversationParams) -> Response:
    ws = state_of(request).view(request)
    book = book_of(request)
    try:
        await book.delete(book.workspace(ws.principal, ws.policy), args.conversation)
    except NotFoundError:
        raise missing(args.conversation) from None
    return ok({"conversation": args.conversation})


@endpoint("feedback", "POST", "/v1/feedback", status=201)
async def feedback(request: Request, args: FeedbackParams) -> Response:
    """Rate an answer: kept on its turn and as a line of the principal's feedback file."""
    ws = state_of(request).view(request)
    book = book_of(request)
    own = book.workspace(ws.principal, ws.policy)
    stored = await book.rate(own, args.conversation, args.turn, args.rating, args.note, viewer=ws)
    body = {"conversation": args.conversation, "turn": args.turn, "rating": args.rating}
    return ok(body | {"stored": str(stored)}, 201)


ENDPOINTS: tuple[Endpoint, ...] = (
    chat,
    conversations,
    conversation,
    conversation_delete,
    feedback,
)
routes = [e.route() for e in ENDPOINTS]
