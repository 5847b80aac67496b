"""Scoped workspaces: a global area, an area per agent and a scratch area per thread.

One backing store holds the three kinds of area side by side::

    global/            shared by every agent (read-only for agents by default)
    agents/{agent_id}/ one agent's own files, kept across its threads
    threads/{thread_id}/ one conversation's scratch files, removed when the thread ends

:class:`Scopes` turns that layout (or one store per kind of area) into a
:class:`ScopedWorkspace` for one principal: an ordinary :class:`~bastion.Workspace` whose
mounts are ``/thread``, ``/agent`` and ``/global`` (plus any other mounts given), each with its
own scope and labels, so every read and write passes the same guard as any other file. A name
relative to the areas is resolved most specific first: the thread's file, then the agent's,
then the global one (:meth:`ScopedWorkspace.resolve`, :meth:`ScopedWorkspace.layered`).

Ids become folder names, so they are checked before they touch a path: 1 to 128 letters,
digits, ``.``, ``_`` or ``-``, starting with a letter or a digit (never ``..``, ``/``, empty
or a control character). Ending a thread deletes its area through the workspace, as the
principal, so the guard decides every deletion.
"""

from __future__ import annotations

import builtins
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from bastion.core.audit import AuditSink, MemoryAuditSink
from bastion.core.errors import (
    ConfigurationError,
    InvalidPathError,
    NotADirectoryError_,
    NotFoundError,
    ScopeError,
)
from bastion.core.models import EntryKind, Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.ports import Store
from bastion.core.principal import Principal
from bastion.stores.folder import FolderStore
from bastion.workspace.journal import Journal
from bastion.workspace.journal.areas import AreaJournal, area_key
from bastion.workspace.workspace import Workspace

if TYPE_CHECKING:
    from bastion.knowledge.engine import Knowledge

__all__ = [
    "Area",
    "AreaView",
    "InvalidScopeIdError",
    "LayeredEntry",
    "ScopeKind",
    "ScopedWorkspace",
    "Scopes",
    "ThreadCleanup",
    "validate_scope_id",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ScopeKind(StrEnum):
    """The kinds of area, listed most specific first (the order names are resolved in)."""

    THREAD = "thread"
    AGENT = "agent"
    GLOBAL = "global"


class InvalidScopeIdError(InvalidPathError):
    """An agent or thread id that cannot name a folder safely."""


def validate_scope_id(value: object, what: str = "id") -> str:
    """``value`` when it is a safe folder name for an area, else :class:`InvalidScopeIdError`."""
    if isinstance(value, str) and _ID.fullmatch(value):
        return value
    shown = repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:37])
    raise InvalidScopeIdError(
        f"{what} {shown} is not valid: use 1-128 letters, digits, '.', '_' or '-', "
        "starting with a letter or a digit"
    )


@dataclass(frozen=True, kw_only=True)
class Area:
    """Where one kind of area lives and how it is mounted.

    For the agent and thread kinds, ``folder`` holds one sub-folder per id; for the global
    kind it is the area itself.
    """

    store: Store
    folder: str = "/"
    """Folder in ``store`` (``/`` for the store's root)."""
    scope: Scope | str = Scope.READ_WRITE
    labels: Labels | None = None
    """Labels every document of the area carries by default (the mount's labels)."""
    prefix: str | None = None
    """Mount prefix in the workspace; ``/thread``, ``/agent`` or ``/global`` by default."""


@dataclass(frozen=True, slots=True)
class AreaView:
    """One area as a scoped workspace shows it."""

    kind: ScopeKind
    prefix: VPath
    """Where the area is mounted (``/thread``)."""
    folder: FolderStore | None = field(default=None, compare=False, repr=False)
    """The folder of the backing store the area is (what ending a thread removes)."""


@dataclass(frozen=True, slots=True)
class LayeredEntry:
    """One name of the overlay of the areas: the most specific entry wins."""

    name: str
    path: VPath
    """The winning entry's workspace path."""
    kind: EntryKind
    scope: ScopeKind
    shadowed: tuple[VPath, ...] = ()
    """Entries of the same name in less specific areas, most specific first."""


@dataclass(frozen=True, slots=True)
class ThreadCleanup:
    """What ending a thread removed."""

    thread_id: str
    removed: int
    """Entries deleted at the top of the thread area (each with everything below it)."""
    complete: bool
    """False when something the principal may not see is left in the area."""


_DESCRIPTIONS = {
    ScopeKind.THREAD: "this thread's scratch files (removed when the thread ends)",
    ScopeKind.AGENT: "this agent's own files, kept across threads",
    ScopeKind.GLOBAL: "files shared by every agent",
}


class ScopedWorkspace:
    """A workspace for one principal, one agent and (optionally) one thread.

    ``workspace`` is a plain :class:`~bastion.Workspace`; the methods here add the overlay of
    the areas (thread, then agent, then global) and the end of a thread.
    """

    def __init__(
        self,
        workspace: Workspace,
        areas: Iterable[AreaView],
        *,
        agent_id: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        order = list(ScopeKind)
        self.workspace = workspace
        self.areas: tuple[AreaView, ...] = tuple(sorted(areas, key=lambda a: order.index(a.kind)))
        """The areas present, most specific first."""
        self.agent_id = agent_id
        self.thread_id = thread_id

    def with_principal(self, principal: Principal) -> ScopedWorkspace:
        """The same areas seen by another principal."""
        return ScopedWorkspace(
            self.workspace.with_principal(principal),
            self.areas,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
        )

    def area(self, kind: ScopeKind | str) -> AreaView | None:
        """The area of that kind, or ``None`` when this workspace has none."""
        wanted = ScopeKind(kind)
        return next((a for a in self.areas if a.kind is wanted), None)

    def candidates(self, name: str | VPath) -> tuple[VPath, ...]:
        """Where ``name`` (relative to the areas) may live, most specific first. A name that
        climbs out with ``..`` is refused (:class:`~bastion.InvalidPathError`)."""
        rel = _relative(name)
        return tuple(area.prefix.join(rel) for area in self.areas)

    async def resolve(self, name: str | VPath) -> VPath:
        """The workspace path of ``name`` in the most specific area that has it and that the
        principal may see: the thread's, then the agent's, then the global one."""
        for candidate in self.candidates(name):
            try:
                await self.workspace.stat(candidate)
            except (NotFoundError, ScopeError, NotADirectoryError_):
                continue  # a file where the name needs a folder: not there either, as in layered
            return candidate
        shown = str(_relative(name)).lstrip("/")
        raise NotFoundError(f"{shown} not found in any area ({self._area_names()})")

    async def layered(self, folder: str | VPath = "") -> builtins.list[LayeredEntry]:
        """The entries of ``folder`` merged across the areas, by name; the most specific one
        wins and the others are listed as shadowed."""
        rel = VPath.ROOT if folder in ("", "/") else _relative(folder)
        merged: dict[str, LayeredEntry] = {}
        for area in self.areas:
            try:
                entries = await self.workspace.list(area.prefix.join(rel))
            except (NotFoundError, ScopeError, NotADirectoryError_):
                continue
            for entry in entries:
                name = entry.path.name
                seen = merged.get(name)
                if seen is None:
                    merged[name] = LayeredEntry(name, entry.path, entry.kind, area.kind)
                else:
                    merged[name] = LayeredEntry(
                        name, seen.path, seen.kind, seen.scope, (*seen.shadowed, entry.path)
                    )
        return [merged[name] for name in sorted(merged)]

    async def end_thread(self) -> ThreadCleanup:
        """Kill the background processes started through this workspace, then delete
        everything in the thread area, as the principal: the guard decides each deletion (a
        read-only area or a denying rule refuses it). The emptied folder is then removed from
        the backing store."""
        area = self.area(ScopeKind.THREAD)
        if area is None or self.thread_id is None:
            raise ConfigurationError("this scoped workspace has no thread area to end")
        ws = self.workspace
        await ws.close_processes()  # the thread's background processes end with it
        entries = await ws.list(area.prefix)
        for entry in entries:
            await ws.delete(entry.path, recursive=True)
        complete = True if area.folder is None else await area.folder.remove_folder_if_empty()
        return ThreadCleanup(self.thread_id, len(entries), complete)

    def _area_names(self) -> str:
        return ", ".join(str(a.prefix) for a in self.areas) or "no areas"


class Scopes:
    """Builds scoped workspaces over the three kinds of area.

    >>> from bastion import MemoryStore, Policy, Principal
    >>> scopes = Scopes.on(MemoryStore(), policy=Policy.allow_all())
    >>> scoped = scopes.workspace(Principal.of("bot"), agent_id="bot", thread_id="t1")
    >>> [str(a.prefix) for a in scoped.areas]
    ['/thread', '/agent', '/global']
    """

    def __init__(
        self,
        *,
        global_area: Area | None,
        agent_area: Area | None,
        thread_area: Area | None,
        policy: Policy,
        audit: AuditSink | None = None,
        mounts: Iterable[Mount] = (),
        journal: Journal | None = None,
    ) -> None:
        self._areas: dict[ScopeKind, Area] = {}
        for kind, area in (
            (ScopeKind.GLOBAL, global_area),
            (ScopeKind.AGENT, agent_area),
            (ScopeKind.THREAD, thread_area),
        ):
            if area is not None:
                self._areas[kind] = area
        self._folders = {kind: _folder(kind, a.folder) for kind, a in self._areas.items()}
        self._prefixes = {kind: _prefix(kind, a.prefix) for kind, a in self._areas.items()}
        self.policy = policy
        self.audit = audit if audit is not None else MemoryAuditSink()
        """One audit sink for every workspace these scopes build."""
        self._extra = tuple(mounts)
        self.journal = journal
        """The change journal every workspace these scopes build records into, each change
        with its thread id (docs/changes.md); ``None``: none."""
        self._threads: dict[str, weakref.WeakSet[Workspace]] = {}
        """The live workspaces built for each thread: ending it ends their processes."""

    @classmethod
    def on(
        cls,
        store: Store,
        *,
        policy: Policy,
        audit: AuditSink | None = None,
        mounts: Iterable[Mount] = (),
        global_scope: Scope | str = Scope.READ_ONLY,
        agent_scope: Scope | str = Scope.READ_WRITE,
        thread_scope: Scope | str = Scope.READ_WRITE,
        labels: Mapping[ScopeKind | str, Labels] | None = None,
        journal: Journal | None = None,
    ) -> Scopes:
        """Every area in one store: ``global/``, ``agents/{id}/`` and ``threads/{id}/``.
        The global area is read-only by default: agents share it, a program fills it."""
        given = {ScopeKind(k): v for k, v in (labels or {}).items()}
        glob, agent, thread = ScopeKind.GLOBAL, ScopeKind.AGENT, ScopeKind.THREAD
        return cls(
            global_area=Area(
                store=store, folder="/global", scope=global_scope, labels=given.get(glob)
            ),
            agent_area=Area(
                store=store, folder="/agents", scope=agent_scope, labels=given.get(agent)
            ),
            thread_area=Area(
                store=store, folder="/threads", scope=thread_scope, labels=given.get(thread)
            ),
            policy=policy,
            audit=audit,
            mounts=mounts,
            journal=journal,
        )

    def workspace(
        self,
        principal: Principal,
        *,
        agent_id: str | None = None,
        thread_id: str | None = None,
        knowledge: Knowledge | None = None,
    ) -> ScopedWorkspace:
        """The workspace of ``principal`` acting as ``agent_id`` in ``thread_id``. Without an
        id the matching area is left out (an agent outside any thread has no ``/thread``)."""
        ids: dict[ScopeKind, str | None] = {
            ScopeKind.THREAD: _checked(thread_id, "thread id"),
            ScopeKind.AGENT: _checked(agent_id, "agent id"),
            ScopeKind.GLOBAL: "",
        }
        mounts: list[Mount] = []
        views: list[AreaView] = []
        areas: dict[str, str] = {}  # the journal keeps an agent's or thread's area apart
        for kind, area in self._areas.items():
            key = ids[kind]
            if key is None:
                continue
            if kind is not ScopeKind.GLOBAL:
                areas[str(self._prefixes[kind])] = area_key(kind.value, key)
            folder = self._folders[kind] if kind is ScopeKind.GLOBAL else self._folders[kind] / key
            view = FolderStore(area.store, folder)
            mount = Mount.of(
                str(self._prefixes[kind]),
                view,
                area.scope,
                labels=area.labels,
                description=_DESCRIPTIONS[kind],
            )
            mounts.append(mount)
            views.append(AreaView(kind, mount.prefix, view))
        ws = Workspace(
            [*mounts, *self._extra],
            policy=self.policy,
            principal=principal,
            audit=self.audit,
            knowledge=knowledge,
            journal=None if self.journal is None else AreaJournal(self.journal, areas),
        )
        thread = ids[ScopeKind.THREAD]
        if thread is not None:
            ws = ws.with_thread(thread)
            if len(self._threads) > 256:  # forget threads whose workspaces are all gone
                self._threads = {k: v for k, v in self._threads.items() if len(v)}
            self._threads.setdefault(thread, weakref.WeakSet()).add(ws)
        return ScopedWorkspace(
            ws,
            views,
            agent_id=ids[ScopeKind.AGENT],
            thread_id=ids[ScopeKind.THREAD],
        )

    async def end_thread(self, thread_id: str, *, principal: Principal) -> ThreadCleanup:
        """Kill the background processes of every workspace built for ``thread_id`` and remove
        its scratch area, deleting as ``principal`` through a workspace (the guard decides
        every deletion)."""
        if ScopeKind.THREAD not in self._areas:
            raise ConfigurationError("these scopes have no thread area")
        for built in list(self._threads.pop(validate_scope_id(thread_id, "thread id"), ())):
            await built.close_processes()
        scoped = self.workspace(principal, thread_id=thread_id)
        return await scoped.end_thread()


def _checked(value: str | None, what: str) -> str | None:
    return None if value is None else validate_scope_id(value, what)


def _relative(name: str | VPath) -> VPath:
    """A name relative to the areas. Parsing from ``/`` keeps it inside: a ``..`` that would
    climb out of the area is refused, like one that climbs above the workspace root."""
    return VPath.parse(name)


def _folder(kind: ScopeKind, raw: str) -> VPath:
    try:
        return VPath.parse(raw)
    except InvalidPathError as exc:
        raise ConfigurationError(f"{kind.value} area folder {raw!r}: {exc}") from exc


def _prefix(kind: ScopeKind, raw: str | None) -> VPath:
    try:
        return VPath.parse(raw if raw is not None else f"/{kind.value}")
    except InvalidPathError as exc:
        raise ConfigurationError(f"{kind.value} area prefix {raw!r}: {exc}") from exc
