"""The page's conversations, kept as files of each principal's own agent area.

A principal's area is an agent area (:mod:`bastion.agents.scopes`) of the server's
conversation store: ``people/{key}/`` where ``key`` is a digest of the principal's tenant and
id (ids such as ``ana@example.com`` are not folder names). The page is the agent acting for the
principal; each principal's workspace mounts its own area only, at ``/agent``::

    /agent/conversations/{id}.json   one conversation, every turn (this module's format)
    /agent/feedback.jsonl            one line per rating of an answer (docs/web.md)

Every read, write and delete goes through that workspace: the server's policy (with one rule
appended, so a policy silent about ``/agent`` lets each principal keep its own conversations;
a rule of the policy that denies still wins), the guard, the file limits and the server's audit
sink, so a conversation is governed and audited like any file.

A stored answer is shown again only while its principal may still read every document it
cites (:meth:`ConversationBook.read`): labels tightened since, a rule added, a document
deleted, and the answer is withheld on reading back, its text, citations and notes replaced
by one neutral note (:data:`WITHHELD`) that says nothing of which document, or why. The
stored turn is kept as it was (an access restored shows it again).

The store is bounded per principal (``[server]`` settings, :class:`Bounds`): conversations
kept (a new one past the bound is refused), bytes of one conversation (a turn that would pass
it is answered but not kept) and bytes of the feedback file (a rating past it is refused).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from bastion.core.audit import on_behalf
from bastion.core.errors import (
    BastionError,
    ConfigurationError,
    ConflictError,
    LimitError,
    NotFoundError,
)
from bastion.core.models import Action, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.policy import Policy, Rule
from bastion.server.settings import Bounds

if TYPE_CHECKING:
    from bastion.core.audit import AuditSink
    from bastion.core.ports import Store
    from bastion.core.principal import Principal
    from bastion.server.file import ServerFile
    from bastion.server.settings import ServerSettings
    from bastion.workspace import Workspace

__all__ = [
    "FEEDBACK",
    "FOLDER",
    "MAX_LISTED",
    "WITHHELD",
    "Bounds",
    "ConversationBook",
    "area_key",
    "conversation_book",
    "missing",
    "new_conversation",
]

FOLDER = VPath.parse("/agent/conversations")
FEEDBACK = VPath.parse("/agent/feedback.jsonl")
_VERSION = 1
MAX_LISTED = 200
"""Most conversations a listing shows (the newest; an older one still opens by its id)."""
_TITLE = 80
_OWN = Rule.allow(
    [Action.READ, Action.LIST, Action.WRITE, Action.DELETE],
    "/agent",
    "/agent/**",
    description="the page's conversations: each principal's own area",
)


WITHHELD = (
    "This answer is withheld: a document it cited is not one you may read now, or is gone. "
    "Ask again for an answer from what you may read."
)
"""What a stored answer reads as once its principal may no longer read a document it cites
(the same words whatever the document, and whether it was hidden or deleted)."""


def area_key(principal: Principal) -> str:
    """The folder name of ``principal``'s area: 32 hexadecimal digits of its tenant and id."""
    raw = f"{principal.tenant or ''}\x00{principal.id}".encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def conversation_book(
    workspace: Workspace, settings: ServerSettings, source: ServerFile | None
) -> ConversationBook:
    """The server's book: ``[server] conversations`` beside the workspace file, or kept in
    memory (for the life of the process) by a server built without a file."""
    if source is not None and source.path is not None:
        from bastion.stores.local import LocalStore

        folder = source.path.resolve().parent / settings.conversations
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"server: conversations: cannot make the folder {folder}: {exc.strerror}"
            ) from None
        return ConversationBook(LocalStore(folder), workspace.audit, settings.conversation_bounds())
    from bastion.stores.memory import MemoryStore

    return ConversationBook(MemoryStore(), workspace.audit, settings.conversation_bounds())


def missing(conversation: str) -> NotFoundError:
    """The one answer for a conversation that is not there, or not the caller's."""
    return NotFoundError(f"no conversation {conversation}: it was deleted, or is not yours")


def new_conversation(question: str, now: float) -> dict[str, Any]:
    title = " ".join(question.split())
    return {
        "version": _VERSION,
        "id": secrets.token_hex(8),
        "title": title if len(title) <= _TITLE else title[: _TITLE - 1] + "…",
        "created": now,
        "updated": now,
        "turns": [],
    }


class ConversationBook:
    """Where the page keeps conversations: one store, one area per principal."""

    def __init__(self, store: Store, audit: AuditSink, bounds: Bounds | None = None) -> None:
        self.store = store
        self.audit = audit
        self.bounds = bounds or Bounds()

    def workspace(self, principal: Principal, policy: Policy) -> Workspace:
        """``principal``'s own area as a workspace (``/agent`` only), under ``policy``."""
        from bastion.agents.scopes import Area, Scopes

        lowest = policy.classifications.order[0]
        area = Area(
            store=self.store,
            folder="/people",
            labels=Labels(tenant=principal.tenant, classification=lowest),
        )
        scopes = Scopes(
            global_area=None,
            agent_area=area,
            thread_area=None,
            policy=dataclasses.replace(policy, rules=(*policy.rules, _OWN)),
            audit=self.audit,
        )
        return scopes.workspace(principal, agent_id=area_key(principal)).workspace

    async def summaries(self, ws: Workspace) -> list[dict[str, Any]]:
        """The newest :data:`MAX_LISTED` conversations of ``ws``'s principal, newest first
        (by the time each file was written: a listing reads each file it shows)."""
        try:
            entries = await ws.list(FOLDER)
        except NotFoundError:
            return []
        files = [e for e in entries if e.kind.value == "file" and e.path.name.endswith(".json")]
        files.sort(key=lambda e: e.mtime or 0.0, reverse=True)
        found = []
        for entry in files[:MAX_LISTED]:
            try:
                data, _ = await self.load(ws, entry.path.name.removesuffix(".json"))
            except (NotFoundError, ValueError):
                continue
            found.append(
                {
                    "id": data["id"],
                    "title": data["title"],
                    "updated": data["updated"],
                    "turns": len(data["turns"]),
                }
            )
        return sorted(found, key=lambda c: c["updated"], reverse=True)

    async def load(self, ws: Workspace, conversation: str) -> tuple[dict[str, Any], str | None]:
        """The conversation and its file's version (:class:`NotFoundError` when there is none;
        :class:`ValueError` when the file is not one this module wrote)."""
        path = FOLDER.child(f"{conversation}.json")
        info = await ws.stat(path)
        data = json.loads(await ws.read_text(path))
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError(f"{path} is not a conversation")
        return data, info.version

    async def read(self, viewer: Workspace, own: Workspace, conversation: str) -> dict[str, Any]:
        """The conversation as ``viewer`` (the principal's view of the workspace) may read it
        back now: :meth:`load` through ``own`` (its area), each answer that cites a document
        ``viewer`` may no longer read withheld (:func:`withheld_for`). Not the principal's, or
        not there: :func:`missing`."""
        try:
            data, _ = await self.load(own, conversation)
        except (NotFoundError, ValueError):
            raise missing(conversation) from None
        return await withheld_for(viewer, data)

    async def start(self, own: Workspace) -> None:
        """Refuse a new conversation when the principal keeps :attr:`Bounds.conversations`
        already (a :class:`LimitError`)."""
        most = self.bounds.conversations
        try:
            entries = await own.list(FOLDER)
        except NotFoundError:
            return
        kept = sum(1 for e in entries if e.kind.value == "file" and e.path.name.endswith(".json"))
        if kept >= most:
            raise LimitError(
                f"you keep {kept} conversations, the most this server allows "
                f"(max_conversations = {most}); delete one to start another"
            )

    async def save(self, ws: Workspace, data: dict[str, Any], version: str | None) -> str | None:
        """Write ``data`` over the version read (``None``: a new file) and give the new
        version; a conversation changed meanwhile is a :class:`ConflictError`, one over
        :attr:`Bounds.conversation_bytes` a :class:`LimitError` (nothing written)."""
        path = FOLDER.child(f"{data['id']}.json")
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        size, most = len(text.encode("utf-8", "surrogatepass")), self.bounds.conversation_bytes
        if size > most:
            raise LimitError(
                f"this conversation would hold {size:,} bytes, over the {most:,} this server "
                "keeps (max_conversation_bytes); start a new conversation"
            )
        if version is None:
            return (await ws.write(path, text, mode=WriteMode.CREATE)).version
        return (await ws.write(path, text, if_version=version)).version

    async def delete(self, ws: Workspace, conversation: str) -> None:
        await ws.delete(FOLDER.child(f"{conversation}.json"))

    async def rate(
        self,
        ws: Workspace,
        conversation: str,
        turn: int,
        rating: str,
        note: str,
        *,
        viewer: Workspace | None = None,
    ) -> VPath:
        """Record ``rating`` on the answer of ``turn``: on the turn itself, and as one line of
        the principal's feedback file (docs/web.md gives its format). The line holds the
        answer as ``viewer`` (the principal's view of the workspace) may read it back now
        (:meth:`read`); a feedback file over :attr:`Bounds.feedback_bytes` refuses it."""
        try:
            data, version = await self.load(ws, conversation)
        except (NotFoundError, ValueError):
            raise missing(conversation) from None
        turns = data["turns"]
        if turn >= len(turns):
            raise NotFoundError(f"conversation {conversation} has no turn {turn}")
        asked = turns[turn]
        # only this turn's citations are looked up (a turn is withheld on its own citations)
        shown = (
            asked
            if viewer is None
            else (await withheld_for(viewer, {"turns": [asked]}))["turns"][0]
        )
        await self._feedback_room(ws)
        before = asked.get("feedback")
        asked["feedback"] = rating
        line = {
            "id": f"{conversation}-{turn}",
            "time": time.time(),
            "principal": ws.principal.id,
            "tenant": ws.principal.tenant,
            "ask_as": sorted(ws.principal.roles),
            "question": asked["asked"],
            "rating": rating,
            "note": note,
            "answer": shown["answer"],
            "status": shown["status"],
            "cites": sorted({c["path"] for c in shown["citations"]}),
        }
        try:
            saved = await self.save(ws, data, version)
        except ConflictError:
            raise ConflictError(
                "the conversation changed while rating it; rate the answer again"
            ) from None
        try:
            # ASCII only: a note's U+2028 or U+0085 would end the line for a reader that
            # splits lines as Python's str.splitlines does, and forge a record after it
            await ws.write(FEEDBACK, json.dumps(line) + "\n", mode=WriteMode.APPEND)
        except BastionError:
            # the rating is both or neither: the turn goes back as it was (a refused or full
            # feedback file must not leave a turn that says it was rated)
            asked["feedback"] = before
            with contextlib.suppress(BastionError):
                await self.save(ws, data, saved)
            raise
        return FEEDBACK

    async def _feedback_room(self, ws: Workspace) -> None:
        """Refuse a rating when the feedback file holds :attr:`Bounds.feedback_bytes`."""
        most = self.bounds.feedback_bytes
        try:
            size = (await ws.stat(FEEDBACK)).size
        except NotFoundError:
            return
        if size >= most:
            raise LimitError(
                f"your feedback file holds {size:,} bytes, the most this server keeps "
                f"(max_feedback_bytes = {most:,}); an operator collects it"
            )


async def withheld_for(viewer: Workspace, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a conversation) with each answer that cites a document ``viewer``'s principal
    may not read now (hidden since, or gone) replaced by :data:`WITHHELD`: no text, no
    citation, no note of it is left. Each cited path is looked up once, on the principal's
    behalf (:func:`~bastion.core.audit.on_behalf`: checks, not its requests)."""
    cited = {str(c.get("path", "")) for t in data["turns"] for c in t.get("citations", ())}
    readable: dict[str, bool] = {}
    with on_behalf():
        for path in sorted(cited):
            try:
                readable[path] = await viewer.exists(path)
            except BastionError:
                readable[path] = False
    turns = [
        turn
        if all(readable[str(c.get("path", ""))] for c in turn.get("citations", ()))
        else _withheld(turn)
        for turn in data["turns"]
    ]
    return {**data, "turns": turns}


def _withheld(turn: dict[str, Any]) -> dict[str, Any]:
    """``turn`` with its answer withheld: the question (the principal's own words) kept."""
    verdict = "Not answered: " + WITHHELD.removeprefix("This answer is withheld: ")
    return {
        **turn,
        "answer": WITHHELD,
        "status": "withheld",
        "citations": [],
        "verification": {"verified": False, "verdict": verdict, "problems": []},
        "notes": [],
    }
