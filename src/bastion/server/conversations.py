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
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from bastion.core.errors import BastionError, ConfigurationError, ConflictError, NotFoundError
from bastion.core.models import Action, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.policy import Policy, Rule

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
        return ConversationBook(LocalStore(folder), workspace.audit)
    from bastion.stores.memory import MemoryStore

    return ConversationBook(MemoryStore(), workspace.audit)


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

    def __init__(self, store: Store, audit: AuditSink) -> None:
        self.store = store
        self.audit = audit

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

    async def save(self, ws: Workspace, data: dict[str, Any], version: str | None) -> str | None:
        """Write ``data`` over the version read (``None``: a new file) and give the new
        version; a conversation changed meanwhile is a :class:`ConflictError`."""
        path = FOLDER.child(f"{data['id']}.json")
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        if version is None:
            return (await ws.write(path, text, mode=WriteMode.CREATE)).version
        return (await ws.write(path, text, if_version=version)).version

    async def delete(self, ws: Workspace, conversation: str) -> None:
        await ws.delete(FOLDER.child(f"{conversation}.json"))

    async def rate(
        self, ws: Workspace, conversation: str, turn: int, rating: str, note: str
    ) -> VPath:
        """Record ``rating`` on the answer of ``turn``: on the turn itself, and as one line of
        the principal's feedback file (docs/web.md gives its format)."""
        try:
            data, version = await self.load(ws, conversation)
        except (NotFoundError, ValueError):
            raise missing(conversation) from None
        turns = data["turns"]
        if turn >= len(turns):
            raise NotFoundError(f"conversation {conversation} has no turn {turn}")
        asked = turns[turn]
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
            "answer": asked["answer"],
            "status": asked["status"],
            "cites": sorted({c["path"] for c in asked["citations"]}),
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
