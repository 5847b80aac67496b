"""A checked workspace file as a server reads it: ``[server]`` and ``[identity]`` are the
server's tables, everything else is the workspace (checked by
:class:`~bastion.config.WorkspaceConfig`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.server.settings import ServerSettings, read_tables

__all__ = ["ServerFile"]

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
