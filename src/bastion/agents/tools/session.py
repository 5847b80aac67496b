"""The safety rules an agent's tools keep for one session (Mastra's workspace tools, Claude
Code's file tools):

* **Read before write.** A file that exists must have been read in this session before it is
  overwritten or edited; a file created or changed by this session counts as read.
* **No stale writes.** If the file changed since that read (another agent, a person, a sync),
  the write is refused and the agent is told to read it again. The check and the write are one
  conditional write (``if_version``), so a writer outside this process is caught too.
* **One writer per path.** Writes to one path through this session (or through any session
  sharing its :class:`PathLocks`) run one at a time, so the version check and the write are
  never interleaved with another write of the same path.
* **Approval.** A human (or a program) can be asked before chosen tools run, or before any
  change under chosen paths. It fails closed: no approver, an approver that raises, or one that
  answers anything but ``True`` is a refusal.

None of this replaces the guard: every call still goes through the workspace, which refuses
what the principal may not do whatever tools exist.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bastion.agents.tools.outputs import OutputLimits, Scratch
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    IsADirectoryError_,
    NotFoundError,
    ScopeError,
)
from bastion.core.globs import Glob
from bastion.core.models import Action, FileInfo, WriteMode
from bastion.core.mounts import MountTable
from bastion.core.paths import VPath
from bastion.workspace.workspace import EditResult, Workspace

if TYPE_CHECKING:
    from bastion.agents.tools.spec import Tool

__all__ = [
    "Approval",
    "ApprovalDeniedError",
    "ApprovalRequest",
    "PathLocks",
    "ReadFirstError",
    "ReadTracker",
    "StaleFileError",
    "ToolSession",
    "split_lines",
]

log = logging.getLogger(__name__)


class ReadFirstError(ConflictError):
    """An existing file was to be overwritten or edited without being read first."""


class StaleFileError(ConflictError):
    """The file changed since this session read it."""


class ApprovalDeniedError(AccessDeniedError):
    """The approver refused the call, failed, or is missing."""


def _tag(info: FileInfo) -> str:
    """What identifies one state of a file: its version, else its size and time."""
    return info.version or f"{info.size}:{info.mtime!r}"


class ReadTracker:
    """The state of each file as this session last read or wrote it."""

    def __init__(self) -> None:
        self._seen: dict[VPath, str] = {}

    def record(self, path: VPath, info: FileInfo) -> None:
        self._seen[path] = _tag(info)

    def record_version(self, path: VPath, version: str | None) -> None:
        if version is None:
            self._seen.pop(path, None)
        else:
            self._seen[path] = version

    def saw(self, path: VPath, info: FileInfo) -> bool:
        """True when ``info`` is the state this session last saw."""
        return self._seen.get(path) == _tag(info)

    def forget(self, path: VPath) -> None:
        """Forget ``path`` and everything under it (deleted or moved away)."""
        for known in [p for p in self._seen if p.is_relative_to(path)]:
            del self._seen[known]

    def expect(self, path: VPath, current: FileInfo) -> str | None:
        """The version to write over, once ``current`` is known to be what was read."""
        seen = self._seen.get(path)
        if seen is None:
            raise ReadFirstError(
                f"{path} exists and was not read in this session; read it first "
                "(read_file), then write"
            )
        if seen != _tag(current):
            raise StaleFileError(
                f"{path} changed since you read it; read it again, then redo your change"
            )
        return current.version


class PathLocks:
    """One asyncio lock per path, made on demand and dropped when nobody holds or waits."""

    def __init__(self) -> None:
        self._locks: dict[VPath, tuple[asyncio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, *paths: VPath) -> AsyncIterator[None]:
        """Hold the locks of ``paths`` (taken in path order, so two holders never deadlock)."""
        taken: list[VPath] = []
        try:
            for path in sorted(set(paths), key=lambda p: p.parts):
                lock, users = self._locks.setdefault(path, (asyncio.Lock(), [0]))
                users[0] += 1
                try:
                    await lock.acquire()
                except BaseException:
                    self._leave(path, locked=False)
                    raise
                taken.append(path)
            yield
        finally:
            for path in reversed(taken):
                self._leave(path, locked=True)

    def _leave(self, path: VPath, *, locked: bool) -> None:
        lock, users = self._locks[path]
        if locked:
            lock.release()
        users[0] -= 1
        if users[0] == 0:
            del self._locks[path]

    def __len__(self) -> int:
        return len(self._locks)


# -- approval --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the approver is asked about."""

    tool: str
    arguments: Mapping[str, Any]
    """The validated arguments of the call."""
    paths: tuple[str, ...]
    """The workspace paths the call names."""
    principal: str
    """Who the agent acts for."""


ApprovalHook = Callable[[ApprovalRequest], "bool | Awaitable[bool]"]


class Approval:
    """Ask ``hook`` before the tools named in ``tools`` run, and before any tool that changes
    files runs on a path matching one of ``paths`` (globs such as ``/docs/**``)."""

    def __init__(
        self, hook: ApprovalHook | None, *, tools: Iterable[str] = (), paths: Iterable[str] = ()
    ) -> None:
        self.hook = hook
        self.tools = frozenset(tools)
        self.paths = tuple(paths)
        self._globs = tuple(Glob.compile(p) for p in self.paths)

    def needed(self, tool: Tool, paths: Iterable[VPath]) -> bool:
        if tool.name in self.tools:
            return True
        return tool.changes and any(g.matches(p) for p in paths for g in self._globs)

    async def ask(self, request: ApprovalRequest) -> None:
        """Return when the call is approved; raise :class:`ApprovalDeniedError` otherwise."""
        refused = f"{request.tool} was not approved; do not retry it, ask the user instead"
        if self.hook is None:
            raise ApprovalDeniedError(f"{request.tool} needs approval and no approver is set")
        try:
            answer = self.hook(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            log.warning("approval hook failed for %s", request.tool, exc_info=True)
            raise ApprovalDeniedError(f"{refused} (the approval check failed)") from None
        if answer is not True:
            raise ApprovalDeniedError(refused)


def split_lines(text: str) -> list[str]:
    """Lines as the workspace counts them: ended by ``\\n`` only, each keeping its end."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# -- the session -----------------------------------------------------------------------------


class _Blind:
    """A file whose state cannot be known before writing (a write-only mount, or a path the
    principal may not write: the write itself gives the guard's answer)."""


_BLIND = _Blind()


class ToolSession:
    """What one agent's tools share: the workspace (one principal), what was read, the write
    locks, the approver, the output caps and the scratch for large results."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        limits: OutputLimits | None = None,
        approval: Approval | None = None,
        locks: PathLocks | None = None,
    ) -> None:
        if approval is not None and approval.hook is None and (approval.tools or approval.paths):
            raise ConfigurationError("Approval names tools or paths but has no hook to ask")
        self.workspace = workspace
        self.limits = limits or OutputLimits()
        self.scratch: Scratch = Scratch(self.limits)
        self.reads = ReadTracker()
        self.locks = locks if locks is not None else PathLocks()
        self.approval = approval
        self._mounts = MountTable(workspace.mounts)

    @property
    def principal(self) -> str:
        return self.workspace.principal.id

    # -- reads -------------------------------------------------------------------------------

    async def read_lines(self, path: VPath, offset: int, limit: int) -> tuple[str, bool]:
        """Up to ``limit`` lines after ``offset`` and whether more follow; the file's state
        is recorded as read. The state is taken before the read, so a change in between makes
        the next write refused as stale (the safe side), never accepted blindly."""
        ws = self.workspace
        info = await ws.stat(path)
        if info.is_dir:
            raise IsADirectoryError_(f"{path} is a directory; list it instead of reading it")
        text = await ws.read_text(path, offset=offset, limit=limit + 1)
        self.reads.record(path, info)
        lines = split_lines(text)
        more = len(lines) > limit
        return "".join(lines[:limit]), more

    # -- writes ------------------------------------------------------------------------------

    def _may_write(self, path: VPath) -> bool:
        mount = self._mounts.find(path)
        if mount is None or not mount.scope.allows(Action.WRITE):
            return False
        ws = self.workspace
        return ws.policy.decide(ws.principal, Action.WRITE, path).allowed

    async def _current(self, path: VPath) -> FileInfo | _Blind | None:
        """The file now at ``path``, ``None`` when there is none, or blind."""
        if not self._may_write(path):
            return _BLIND
        try:
            return await self.workspace.stat(path)
        except NotFoundError:
            return None
        except ScopeError:  # a write-only mount: nothing there can be read first
            return _BLIND

    def _expect(self, path: VPath, current: FileInfo | _Blind | None) -> str | None:
        if isinstance(current, FileInfo):
            if current.is_dir:
                raise IsADirectoryError_(f"{path} is a directory")
            return self.reads.expect(path, current)
        return None

    async def write(
        self,
        path: VPath,
        content: str,
        *,
        create_only: bool = False,
        parents: bool = True,
        backup: bool = False,
    ) -> tuple[FileInfo, bool]:
        """Create or overwrite ``path`` under the rules; the new info and whether the file is
        new. ``create_only`` refuses an existing file."""
        ws = self.workspace
        async with self.locks.hold(path):
            current = await self._current(path)
            if current is None or (create_only and not isinstance(current, FileInfo)):
                info = await ws.write(path, content, mode=WriteMode.CREATE, parents=parents)
                created = True
            elif create_only:
                raise AlreadyExistsError(f"{path} already exists; update it instead of creating")
            else:
                version = self._expect(path, current)
                info = await ws.write(
                    path, content, if_version=version, parents=parents, backup=backup
                )
                created = False
            self.reads.record(path, info)
            return info, created

    async def edit(self, path: VPath, old: str, new: str, *, replace_all: bool) -> EditResult:
        """Replace ``old`` by ``new`` in a file this session has read (and that has not
        changed since)."""
        async with self.locks.hold(path):
            current = await self._current(path)
            if current is None:
                raise NotFoundError(f"{path} not found")
            version = self._expect(path, current)
            result = await self.workspace.edit(
                path, old, new, replace_all=replace_all, if_version=version
            )
            self.reads.record_version(path, result.version)
            return result

    async def append(self, path: VPath, content: str, *, parents: bool = True) -> FileInfo:
        """Add to the end of a file (no read needed: nothing is overwritten)."""
        async with self.locks.hold(path):
            before = await self._current(path)
            info = await self.workspace.append(path, content, parents=parents)
            if isinstance(before, FileInfo) and self.reads.saw(path, before):
                self.reads.record(path, info)
            return info

    async def delete(self, path: VPath, *, recursive: bool) -> None:
        async with self.locks.hold(path):
            await self.workspace.delete(path, recursive=recursive)
            self.reads.forget(path)

    async def transfer(self, src: VPath, dst: VPath, *, move: bool, overwrite: bool) -> FileInfo:
        """Copy or move; replacing an existing file follows the read-before-write rule."""
        ws = self.workspace
        async with self.locks.hold(src, dst):
            if overwrite:
                current = await self._current(dst)
                if isinstance(current, FileInfo) and current.is_file:
                    self._expect(dst, current)
            if move:
                info = await ws.move(src, dst, overwrite=overwrite)
                self.reads.forget(src)
            else:
                info = await ws.copy(src, dst, overwrite=overwrite)
            self.reads.forget(dst)
            return info

    # -- approval ----------------------------------------------------------------------------

    async def approve(self, tool: Tool, arguments: Mapping[str, Any], paths: list[VPath]) -> None:
        """Ask the approver when ``tool`` on ``paths`` needs it; raise when refused."""
        if self.approval is None or not self.approval.needed(tool, paths):
            return
        request = ApprovalRequest(
            tool.name, dict(arguments), tuple(str(p) for p in paths), self.principal
        )
        await self.approval.ask(request)
