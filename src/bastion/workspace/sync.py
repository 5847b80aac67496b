"""The blocking facade, derived mechanically from the async :class:`Workspace`: it is defined
beside it in :mod:`bastion.workspace.workspace` (``Workspace.sync()`` returns it, so the two
are one module, not a cycle) and importable from here.

Each method is one line: ``name = _blocking(Workspace.name)``, which runs the coroutine with
:func:`~bastion.workspace.blocking.run_blocking`: in the calling thread, on Bastion's one shared
event loop, when no loop runs in that thread (a script, a synchronous agent's tool call: no
thread hop, and a call that never waits finishes in its first step); handed to that loop when
one does (a notebook, an async server) or when another thread is driving the loop. The facade
works from plain code, from many threads at once, and from code that already runs a loop.
``tests/workspace/test_sync_facade.py`` checks that every public coroutine method of
:class:`Workspace` is here.
"""

from __future__ import annotations

from bastion.workspace.blocking import run_blocking
from bastion.workspace.workspace import SyncWorkspace

__all__ = ["SyncWorkspace", "run_blocking"]
