"""A server from one workspace file: ``[server]`` and ``[identity]`` are the server's tables,
everything else is the workspace (checked by :class:`~bastion.config.WorkspaceConfig`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from bastion.core.errors import ConfigurationError
from bastion.server.settings import ServerSettings, read_tables

__all__ = ["ServerFile", "opened_app"]

_SERVER_TABLES = ("server", "identity")


@dataclasses.dataclass(frozen=True)
class ServerFile:
    """A checked workspace file with its server tables; nothing opened yet."""

    workspace: Any
    """The :class:`~bastion.config.WorkspaceConfig` of the rest of the file."""
    settings: ServerSettings
    identity: Any
    """The :class:`~bastion.governance.identity_config.IdentityConfig`, or ``None``."""
    path: Path | None = None
    """Where it was read from (followed while the server runs: :mod:`bastion.server.reload`)."""
    env: Mapping[str, str] | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def read(
        cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
    ) -> ServerFile:
        from bastion.config import WorkspaceConfig
        from bastion.governance.identity_config import IdentityConfig

        file = Path(path)
        data = read_tables(file)
        rest = {k: v for k, v in data.items() if k not in _SERVER_TABLES}
        try:
            raw_server = data.get("server", {})
            if not isinstance(raw_server, dict):
                raise ConfigurationError("server: must be a table")
            settings = ServerSettings.from_dict(raw_server)
            raw_identity = data.get("identity")
            identity = None
            if raw_identity is not None:
                if not isinstance(raw_identity, dict):
                    raise ConfigurationError("identity: must be a table")
                identity = IdentityConfig.from_dict(
                    raw_identity, base_dir=file.resolve().parent, environ=env
                )
            workspace = WorkspaceConfig.from_dict(rest, base=file.resolve().parent, env=env)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{file}: {exc}") from None
        return cls(workspace, settings, identity, file, env)


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
