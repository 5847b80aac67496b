"""A server from one workspace file: ``[server]`` and ``[identity]`` are the server's tables,
everything else is the workspace (checked by :class:`~bastion.config.WorkspaceConfig`)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette

from bastion.server.file import ServerFile

__all__ = ["ServerFile", "opened_app"]


@contextlib.contextmanager
def opened_app(server: ServerFile) -> Iterator[Starlette]:
    """The app over the file's workspace, which is opened here and closed on leaving (call
    it outside an event loop). Opening brings the index up to date as every workspace file
    does (``[knowledge] index_on_open``, :meth:`WorkspaceConfig.build`): files written while
    no server ran, or by a process killed mid-write, are indexed before the first request."""
    from bastion.server.app import create_app

    server.settings.check_bind(authenticated=server.identity is not None)
    people: list[Any] = []
    if server.settings.demo_login:
        from bastion.demo.corpus import users

        people = [(u.principal, u.about) for u in users()]
    owner = dataclasses.replace(server.workspace, principal=None)
    with owner.opened() as ws:
        yield create_app(
            ws,
            identity=server.identity,
            settings=server.settings,
            demo_users=people,
            source=server,
        )
