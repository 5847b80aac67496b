"""The safety rules an agent's tools keep for one session (Mastra's workspace tools, Claude
Code's file tools):

* **Read before write.** A file that exists must have been read in this session before it is
  overwritten, edited or deleted; a file created or changed by this session counts as read.
  The rule holds for trees: a recursive delete needs every file in the tree read, and a copy
  that overwrites needs every file it replaces read. A refusal names the files to read.
* **No stale writes.** If the file changed since that read (another agent, a person, a sync),
  the write is refused and the agent is told to read it again. The check and the write are one
  conditional write (``if_version``), so a writer outside this process is caught too.
* **One writer per path.** Writes to one path through this session (or through any session
  sharing its :class:`PathLocks`) run one at a time, so the version check and the write are
  never interleaved with another write of the same path.
* **Approval.** A human (or a program) can be asked before chosen tools run, or before any
  change under chosen paths. A call that touches a whole tree (a recursive delete, a move or
  copy of a directory) needs approval when a path pattern could match anything in the trees it
  names, source or destination; this is decided from the patterns, without listing the tree.
  A command is judged by its effects: it is asked about before it runs in a folder a path
  pattern could match in, and again, per path, for each change it made under a pattern before
  that change is written back (``docs/sandbox.md``). It fails closed: no approver, an approver
  that raises, or one that answers anything but ``True`` is a refusal.

The locks and the read records are per process (per session for the reads): across
processes, writes are protected by the store's compare-and-set (a write after another
process's change fails with "changed since ...; read it again"), and mounts whose store cannot
check that refuse conditional writes.

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

from bastion.agents.tools.commands import CommandRule, needs_approval
from bastion.agents.tools.outputs import OutputLimits, Scratch
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    IsADirectoryError_,
    NotFoundError,
    OperationError,
    ScopeError,
)
from bastion.core.globs import Glob
from bastion.core.models import Action, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.sandbox.result import RunLimits
from bastion.workspace.workspace import EditResult, TextPage, Workspace

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

_NAMED = 5
"""Files a read-first refusal names before it counts the rest."""


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

    def knows(self, path: VPath) -> bool:
        """True when this session read or wrote ``path`` (in some state)."""
        return path in self._seen

    def saw(self, path: VPath, info: FileInfo) -> bool:
        """True when ``info`` is the state this session last saw."""
        return self._seen.get(path) == _tag(info)

    def forget(self, path: VPath) -> None:
        """Forget ``path`` and everything under it (deleted or moved away)."""
        for known in [p for p in self._seen if p.is_relative_to(path)]:
            del self._seen[known]

    def expect(self, path: VPath, current: FileInfo, then: str = "write") -> str | None:
        """The version to write over, once ``current`` is known to be what was read
        (``then`` names what the refusal tells the agent to do after reading)."""
        seen = self._seen.get(path)
        if seen is None:
            raise ReadFirstError(
                f"{path} exists and was not read in this session; read it first "
                f"(read_file), then {then}"
            )
        if seen != _tag(current):
            raise StaleFileError(
                f"{path} changed since you read it; read it again, then redo your change"
            )
        return current.version


class PathLocks:
    """One asyncio lock per path, made on demand and dropped when nobody holds or waits.

    Per process: another process's writes are caught by the store's compare-and-set instead
    (``Store.write``)."""

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
    trees: tuple[str, ...] = ()
    """The named paths whose whole subtree the call touches (a directory deleted, moved or
    copied, and where it goes)."""
    change: str | None = None
    """Set when a command's change is asked about before it is written back: ``write`` (a
    file created or changed), ``delete`` or ``mkdir``; ``paths`` is then that one path. The
    change is applied only if this request is approved."""


ApprovalHook = Callable[[ApprovalRequest], "bool | Awaitable[bool]"]


class Approval:
    """Ask ``hook`` before the tools named in ``tools`` run, before any tool that changes
    files runs on a path matching one of ``paths`` (globs such as ``/docs/**``), and before
    a command matching one of ``commands`` runs (rules such as ``rm`` or ``git push``; see
    :mod:`bastion.agents.tools.commands`).

    For a command, ``paths`` is the boundary: it is asked before it runs in a folder a
    pattern could match in, and again for each path matching a pattern that it created,
    changed or deleted, before that change is written back (a refused change stays out,
    reported per path). ``commands`` only reads the command's text, which a command can
    always spell otherwise (``r{m,x}``, an alias, a script): a convenience, not a boundary."""

    def __init__(
        self,
        hook: ApprovalHook | None,
        *,
        tools: Iterable[str] = (),
        paths: Iterable[str] = (),
        commands: Iterable[str] = (),
    ) -> None:
        self.hook = hook
        self.tools = frozenset(tools)
        self.paths = tuple(paths)
        self._globs = tuple(Glob.compile(p) for p in self.paths)
        self.commands = tuple(CommandRule.parse(c) for c in commands)

    def command_needed(self, command: object) -> bool:
        """True when ``command`` (a string or a list of strings) must be approved: a command
        rule matches it, or rules are set and it cannot be matched word by word."""
        if isinstance(command, str) or (
            isinstance(command, list | tuple) and all(isinstance(w, str) for w in command)
        ):
            return needs_approval(self.commands, command)
        return bool(self.commands)  # nothing a rule can read: ask (fail closed)

    def needed(self, tool: Tool, paths: Iterable[VPath], trees: Iterable[VPath] = ()) -> bool:
        """True when the call must be approved: the tool is named, or it changes files and a
        path pattern matches a named path or could match anything under one of ``trees``
        (the named paths whose whole subtree the call touches)."""
        if tool.name in self.tools:
            return True
        if not tool.changes:
            return False
        if any(g.matches(p) for p in paths for g in self._globs):
            return True
        return any(g.matches(t) or g.could_match_below(t) for t in trees for g in self._globs)

    def protects(self, path: VPath) -> bool:
        """True when a path pattern matches ``path`` (a change there needs approval)."""
        return any(g.matches(path) for g in self._globs)

    def reaches_below(self, paths: Iterable[VPath]) -> bool:
        """True when a path pattern could match something under one of ``paths``."""
        return any(g.could_match_below(p) for p in paths for g in self._globs)

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
        run_limits: RunLimits | None = None,
    ) -> None:
        if (
            approval is not None
            and approval.hook is None
            and (approval.tools or approval.paths or approval.commands)
        ):
            raise ConfigurationError(
                "Approval names tools, paths or commands but has no hook to ask"
            )
        self.workspace = workspace
        self.limits = limits or OutputLimits()
        self.scratch: Scratch = Scratch(self.limits)
        self.reads = ReadTracker()
        self.locks = locks if locks is not None else PathLocks()
        self.approval = approval
        self.run_limits = run_limits
        """The limits of the commands the ``execute`` tool runs (``None``: the defaults)."""

    @property
    def principal(self) -> str:
        return self.workspace.principal.id

    # -- reads -------------------------------------------------------------------------------

    async def read_page(self, path: str | VPath, offset: int, limit: int) -> TextPage:
        """Up to ``limit`` lines after ``offset``, whether more follow and the file they came
        from (its :attr:`~FileInfo.path` the path parsed, once, by the read); the file's state
        is recorded as read. One workspace read, whole from one version of the file.

        A page from the start records its state; so does a first read at any line (a partial
        read is a read). A later page never replaces a state recorded before: when the file
        changed between the pages, the lines before this one were read from another version,
        so the state recorded stays the old one and the next write is refused as stale (the
        safe side), never applied over lines the session did not see."""
        try:
            page = await self.workspace.read_lines(path, offset=offset, limit=limit)
        except IsADirectoryError_:
            raise IsADirectoryError_(
                f"{VPath.parse(path)} is a directory; list it instead of reading it"
            ) from None
        if offset == 0 or not self.reads.knows(page.info.path):
            self.reads.record(page.info.path, page.info)
        return page

    async def read_lines(self, path: str | VPath, offset: int, limit: int) -> tuple[str, bool]:
        """Up to ``limit`` lines after ``offset`` and whether more follow (see
        :meth:`read_page`)."""
        page = await self.read_page(path, offset, limit)
        return page.text, page.more

    # -- writes ------------------------------------------------------------------------------

    def _may(self, action: Action, path: VPath) -> bool:
        """Whether the mount's scope and the policy may allow ``action`` on ``path``, in the
        principal's view of the mounts (a mount it may see nothing of is not there)."""
        return self.workspace.view.may(action, path)

    async def _current(self, path: VPath) -> FileInfo | _Blind | NotFoundError:
        """The file now at ``path``; the workspace's answer when there is none (what the
        principal is told of it, as the workspace tells it); or blind: the principal may not
        write there, or may not read what is there (a write-only mount, a drop box), so
        nothing is looked at and the write itself gives the guard's answer."""
        if not (self._may(Action.WRITE, path) and self._may(Action.READ, path)):
            return _BLIND
        try:
            return await self.workspace.stat(path)
        except NotFoundError as exc:
            return exc
        except ScopeError:  # pragma: no cover - a mount that may not be read is blind above
            return _BLIND

    def _expect(self, path: VPath, current: FileInfo | _Blind | NotFoundError) -> str | None:
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
            if isinstance(current, NotFoundError) or (
                create_only and not isinstance(current, FileInfo)
            ):
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
            if isinstance(current, NotFoundError):
                raise current  # what the workspace tells of the path, as it told it
            version = self._expect(path, current)
            result = await self.workspace.edit(
                path, old, new, replace_all=replace_all, if_version=version
            )
            self.reads.record_version(path, result.version)
            return result

    async def append(self, path: VPath, content: str, *, parents: bool = True) -> FileInfo:
        """Add to the end of a file (no read needed: nothing is overwritten).

        When the session had read the file as it is, the append is made on condition of that
        version, and the file stays read (its new state is what was read plus what was
        added). When another writer (in any process) came in between, the append goes on
        unconditionally but the file no longer counts as read: what that writer added was
        never seen."""
        ws = self.workspace
        async with self.locks.hold(path):
            before = await self._current(path)
            if not (
                isinstance(before, FileInfo)
                and before.version is not None
                and self.reads.saw(path, before)
            ):
                return await ws.append(path, content, parents=parents)
            try:
                info = await ws.write(
                    path, content, mode=WriteMode.APPEND, parents=parents, if_version=before.version
                )
            except ConflictError:
                return await ws.append(path, content, parents=parents)
            self.reads.record(path, info)
            return info

    async def delete(self, path: VPath, *, recursive: bool) -> None:
        """Delete a file this session has read (and that has not changed since), or a tree
        whose every file it has read."""
        async with self.locks.hold(path):
            await self._read_before_delete(path, recursive=recursive)
            await self.workspace.delete(path, recursive=recursive)
            self.reads.forget(path)

    async def transfer(self, src: VPath, dst: VPath, *, move: bool, overwrite: bool) -> FileInfo:
        """Copy or move; replacing an existing file follows the read-before-write rule, and so
        does each file a copy of a tree replaces in the tree it is copied over."""
        ws = self.workspace
        async with self.locks.hold(src, dst):
            if overwrite:
                current = await self._current(dst)
                if isinstance(current, FileInfo) and current.is_file:
                    self._expect(dst, current)
                elif isinstance(current, FileInfo) and not move:
                    await self._read_before_merge(src, dst)
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
        approval = self.approval
        if approval is None:
            return
        trees: list[VPath] = []
        if tool.command is not None and tool.changes:
            # asked before a command runs where a pattern could match (its folder or below);
            # what it changes anywhere is asked about per path before it is written back
            trees = list(paths)
        elif tool.trees and tool.changes and paths and approval.reaches_below(paths):
            trees = await self._trees(paths)
        needed = approval.needed(tool, paths, trees)
        if tool.command is not None and (
            approval.command_needed(arguments.get(tool.command))
            or (
                isinstance(arguments.get("stdin"), str)
                and approval.command_needed(arguments["stdin"])
            )
        ):
            needed = True  # input to a command may be a shell's: its lines are read too
        if not needed:
            return
        request = ApprovalRequest(
            tool.name,
            dict(arguments),
            tuple(str(p) for p in paths),
            self.principal,
            trees=tuple(str(t) for t in trees),
        )
        await approval.ask(request)

    async def _trees(self, paths: list[VPath]) -> list[VPath]:
        """The named paths whose whole subtree a tree tool touches: all of them when the
        first (what is deleted, moved or copied) is a directory the principal can see, none
        when it is a file or is not there for the principal (the call is then refused). When
        it cannot be told (a store failing, a rate limit), all of them: approval fails closed."""
        try:
            first = await self.workspace.stat(paths[0])
        except NotFoundError:
            return []
        except OperationError:
            return list(paths)
        return list(paths) if first.is_dir else []

    # -- read before write, for trees --------------------------------------------------------

    async def _read_before_delete(self, path: VPath, *, recursive: bool) -> None:
        """Refuse deleting a file, or a tree's files, that this session has not read (or
        that changed since). Where the principal may not delete, or the entry cannot be
        seen, nothing is checked here: the delete itself gives the guard's answer."""
        if not self._may(Action.DELETE, path):
            return
        ws = self.workspace
        try:
            info = await ws.stat(path)
            if info.is_file:
                self.reads.expect(path, info, then="delete it")
                return
            if not recursive:
                return  # an empty directory, or the delete says it is not empty
            files = [e for e in await ws.list(path, recursive=True) if e.is_file]
        except (NotFoundError, AccessDeniedError):
            return
        self._require_read(files, f"delete {path}")

    async def _read_before_merge(self, src: VPath, dst: VPath) -> None:
        """Refuse copying the tree ``src`` over the directory ``dst`` when a file it would
        replace there has not been read (or changed since)."""
        ws = self.workspace
        try:
            info = await ws.stat(src)
            if not info.is_dir:
                return  # a file onto a directory: the copy refuses it
            sources = [e.path for e in await ws.list(src, recursive=True) if e.is_file]
            there = {e.path: e for e in await ws.list(dst, recursive=True) if e.is_file}
        except (NotFoundError, AccessDeniedError):
            return
        replaced = [there[t] for t in (dst.join(p.relative_to(src)) for p in sources) if t in there]
        self._require_read(replaced, f"copy {src} over {dst}")

    def _require_read(self, files: list[FileInfo], task: str) -> None:
        """Raise naming the files of ``files`` this session has not read as they are now."""
        unread = [f.path for f in files if not self.reads.saw(f.path, f)]
        if not unread:
            return
        shown = ", ".join(str(p) for p in unread[:_NAMED])
        more = f" and {len(unread) - _NAMED} more" if len(unread) > _NAMED else ""
        error = ReadFirstError if any(not self.reads.knows(p) for p in unread) else StaleFileError
        raise error(
            f"cannot {task} yet: read these files first (read_file), then retry: {shown}{more} "
            "(not read in this session, or changed since)"
        )
