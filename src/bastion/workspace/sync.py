"""The blocking facade, derived mechanically from the async :class:`Workspace`: ``Workspace.sync()``
returns it (importing this module when first called).

Each method is one line: ``name = _blocking(Workspace.name)``, which runs the coroutine with
:func:`~bastion.workspace.blocking.run_blocking`: in the calling thread, on Bastion's one shared
event loop, when no loop runs in that thread (a script, a synchronous agent's tool call: no
thread hop, and a call that never waits finishes in its first step); handed to that loop when
one does (a notebook, an async server) or when another thread is driving the loop. The facade
works from plain code, from many threads at once, and from code that already runs a loop.
``tests/unit/test_sync_facade.py`` checks that every public coroutine method of
:class:`Workspace` is here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from bastion.core.audit import AuditSink
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.principal import Principal
from bastion.workspace.blocking import run_blocking
from bastion.workspace.workspace import Workspace

__all__ = ["SyncWorkspace", "run_blocking"]


# -- the blocking facade ---------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[Workspace, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[SyncWorkspace, P], R]:
    def call(self: SyncWorkspace, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return run_blocking(method(self.aio, *args, **kwargs))

    functools.update_wrapper(call, method)
    return call


class SyncWorkspace:
    """Blocking twin of :class:`Workspace`; ``aio`` is the async workspace underneath."""

    def __init__(self, aio: Workspace) -> None:
        self.aio = aio

    @classmethod
    def create(cls, mounts: Any, **kwargs: Any) -> SyncWorkspace:
        """Build the async workspace and wrap it: ``SyncWorkspace.create(mounts, policy=...)``."""
        return cls(Workspace(mounts, **kwargs))

    # Plain (non-async) members are passed through.
    @property
    def principal(self) -> Principal:
        return self.aio.principal

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self.aio.mounts

    @property
    def audit(self) -> AuditSink:
        return self.aio.audit

    def filesystem_map(self) -> str:
        return self.aio.filesystem_map()

    def parse_path(self, path: str | VPath, *, operation: str) -> VPath:
        return self.aio.parse_path(path, operation=operation)

    @property
    def has_index(self) -> bool:
        return self.aio.has_index

    @property
    def search_modes(self) -> tuple[str, ...]:
        return self.aio.search_modes

    def with_principal(self, principal: Principal) -> SyncWorkspace:
        return SyncWorkspace(self.aio.with_principal(principal))

    def with_thread(self, thread: str | None) -> SyncWorkspace:
        return SyncWorkspace(self.aio.with_thread(thread))

    stat = _blocking(Workspace.stat)
    exists = _blocking(Workspace.exists)
    read_bytes = _blocking(Workspace.read_bytes)
    read_text = _blocking(Workspace.read_text)
    read_lines = _blocking(Workspace.read_lines)
    write = _blocking(Workspace.write)
    append = _blocking(Workspace.append)
    edit = _blocking(Workspace.edit)
    mkdir = _blocking(Workspace.mkdir)
    delete = _blocking(Workspace.delete)
    copy = _blocking(Workspace.copy)
    move = _blocking(Workspace.move)
    list = _blocking(Workspace.list)
    glob = _blocking(Workspace.glob)
    grep = _blocking(Workspace.grep)
    search = _blocking(Workspace.search)
    index_directory = _blocking(Workspace.index_directory)
    rebuild_index = _blocking(Workspace.rebuild_index)
    reindex = _blocking(Workspace.reindex)
    ask = _blocking(Workspace.ask)
    run = _blocking(Workspace.run)
    start_process = _blocking(Workspace.start_process)
    processes = _blocking(Workspace.processes)
    read_output = _blocking(Workspace.read_output)
    send_input = _blocking(Workspace.send_input)
    kill_process = _blocking(Workspace.kill_process)
    write_back = _blocking(Workspace.write_back)
    close_processes = _blocking(Workspace.close_processes)
    changes = _blocking(Workspace.changes)
    diff = _blocking(Workspace.diff)
    undo = _blocking(Workspace.undo)
    undo_last = _blocking(Workspace.undo_last)
    revert = _blocking(Workspace.revert)
    checkpoint = _blocking(Workspace.checkpoint)
    checkpoints = _blocking(Workspace.checkpoints)
    restore = _blocking(Workspace.restore)
