"""The server's own settings: the ``[server]`` table of the workspace file, checked once.

```toml
[server]
host = "127.0.0.1"          # loopback by default; a public address needs [identity]
port = 8765
demo_login = false          # sign in as a demo user by name (the tour only)
cors_origins = []           # CORS is off unless origins are named
allowed_hosts = []          # names this server answers to, besides localhost, 127.0.0.1, [::1]
allowed_origins = []        # pages on other sites that may call it (besides cors_origins)
max_body_bytes = 1048576    # any request body
max_upload_bytes = 10485760 # an /v1/ingest upload, counted while it streams
requests_per_minute = 600   # per principal, every request (the policy's rate limit
                            # still applies to each operation)
shared_state = ".bastion/server.db"  # revoked tokens, accounts: a file or postgresql:// URL
conversations = ".bastion/conversations"  # the web page's conversations (a folder)
max_conversations = 200     # conversations each principal keeps (then delete one)
max_conversation_bytes = 1048576  # one conversation's file (a turn past it is not kept)
max_feedback_bytes = 4194304      # each principal's feedback file (then ratings are refused)
log_format = "text"         # or "json": one object per line (bastion serve --log-format)
shutdown_grace_s = 30       # on SIGTERM/SIGINT, how long open requests may take to finish

```
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bastion.configfile import read_table
from bastion.core.errors import ConfigurationError
from bastion.core.schema import check_keys
from bastion.server.origin import (
    HostName,
    Origin,
    parse_allowed_host,
    parse_allowed_origin,
)

__all__ = ["LOG_FORMATS", "Bounds", "ServerSettings", "is_loopback", "read_tables"]

_KEYS = frozenset(
    {
        "host",
        "port",
        "demo_login",
        "cors_origins",
        "allowed_hosts",
        "allowed_origins",
        "max_body_bytes",
        "max_upload_bytes",
        "requests_per_minute",
        "shared_state",
        "conversations",
        "max_conversations",
        "max_conversation_bytes",
        "max_feedback_bytes",
        "log_format",
        "shutdown_grace_s",
    }
)

LOG_FORMATS = ("text", "json")


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much of the web page's conversation store one principal may fill (the
    ``max_conversations``, ``max_conversation_bytes`` and ``max_feedback_bytes`` settings;
    :mod:`bastion.server.conversations`)."""

    conversations: int = 200
    """Conversations kept per principal (``max_conversations``)."""
    conversation_bytes: int = 1 << 20
    """Bytes of one conversation's file (``max_conversation_bytes``)."""
    feedback_bytes: int = 4 << 20
    """Bytes of the principal's feedback file (``max_feedback_bytes``)."""


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """How ``bastion serve`` listens and what it lets in."""

    host: str = "127.0.0.1"
    port: int = 8765
    demo_login: bool = False
    """``POST /v1/auth/demo`` signs a demo user in by name: for the tour, never for real data."""
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the API from a browser; empty: CORS is off."""
    allowed_hosts: tuple[str, ...] = ()
    """Names the server answers to (``Host``), besides the loopback ones: a request naming
    another host is refused with a ``421`` (DNS rebinding; :mod:`bastion.server.origin`)."""
    allowed_origins: tuple[str, ...] = ()
    """Pages on other sites whose requests are let in (besides ``cors_origins``); a request
    from any other site's page is refused with a ``403``."""
    max_body_bytes: int = 1 << 20
    max_upload_bytes: int = 10 << 20
    requests_per_minute: int | None = 600
    """Requests per principal per minute (``None``: no server-side cap)."""
    shared_state: str = ".bastion/server.db"
    """What every process of this workspace shares (revoked tokens, accounts): a SQLite file
    (relative to the workspace file) or a ``postgresql://`` URL (:mod:`bastion.server.shared`)."""
    conversations: str = ".bastion/conversations"
    """The folder (relative to the workspace file) of the web page's conversations: one area
    per principal, read and written through the guard (:mod:`bastion.server.conversations`)."""
    max_conversations: int = 200
    """Conversations each principal keeps: a new one past it is refused until one is deleted."""
    max_conversation_bytes: int = 1 << 20
    """Bytes of one conversation's file: a turn that would pass it is answered, not kept."""
    max_feedback_bytes: int = 4 << 20
    """Bytes of each principal's feedback file: past it, ratings are refused."""
    log_format: str = "text"
    """``bastion serve``'s log lines: ``"text"`` or ``"json"`` (one object per line)."""
    shutdown_grace_s: int = 30
    """On ``SIGTERM``/``SIGINT``: seconds the requests still open (a streamed answer, an MCP
    call) may take to finish before they are cut."""

    def __post_init__(self) -> None:
        for name in (
            "max_body_bytes",
            "max_upload_bytes",
            "max_conversation_bytes",
            "max_feedback_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"server: {name} must be a positive number of bytes")
        most = self.max_conversations
        if isinstance(most, bool) or not isinstance(most, int) or most < 1:
            raise ConfigurationError("server: max_conversations must be a positive integer")
        if isinstance(self.port, bool) or not isinstance(self.port, int):
            raise ConfigurationError("server: port must be an integer from 0 to 65535")
        if not 0 <= self.port <= 65535:
            raise ConfigurationError("server: port must be an integer from 0 to 65535")
        rpm = self.requests_per_minute
        if rpm is not None and (isinstance(rpm, bool) or not isinstance(rpm, int) or rpm < 1):
            raise ConfigurationError("server: requests_per_minute must be a positive integer")
        if not isinstance(self.shared_state, str) or not self.shared_state.strip():
            raise ConfigurationError(
                "server: shared_state must be a file path or a postgresql:// URL"
            )
        if not isinstance(self.conversations, str) or not self.conversations.strip():
            raise ConfigurationError("server: conversations must be a folder path")
        if self.log_format not in LOG_FORMATS:
            raise ConfigurationError('server: log_format must be "text" or "json"')
        grace = self.shutdown_grace_s
        if isinstance(grace, bool) or not isinstance(grace, int) or not 0 <= grace <= 3600:
            raise ConfigurationError(
                "server: shutdown_grace_s must be a whole number of seconds from 0 to 3600"
            )

        if not isinstance(self.host, str) or not self.host:
            raise ConfigurationError('server: host must be an address such as "127.0.0.1"')
        self.host_names()
        self.trusted_origins()

    def conversation_bounds(self) -> Bounds:
        """What one principal may keep of the page's conversations."""
        return Bounds(self.max_conversations, self.max_conversation_bytes, self.max_feedback_bytes)

    def host_names(self) -> tuple[HostName, ...]:
        """The checked ``allowed_hosts`` (a :class:`ConfigurationError` for a bad one)."""
        return tuple(parse_allowed_host(name) for name in _strings(self.allowed_hosts, "hosts"))

    def trusted_origins(self) -> tuple[Origin, ...]:
        """``allowed_origins`` and ``cors_origins``, checked."""
        found = (*_strings(self.allowed_origins, "origins"), *self.cors_origins)
        return tuple(parse_allowed_origin(origin) for origin in found)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServerSettings:
        check_keys(data, _KEYS, "server")
        origins = data.get("cors_origins", [])
        if not isinstance(origins, list) or not all(isinstance(o, str) and o for o in origins):
            raise ConfigurationError("server: cors_origins must be a list of origins")
        if "*" in origins:
            raise ConfigurationError(
                'server: cors_origins may not be "*" (tokens would be usable from any site); '
                "name each origin"
            )
        demo = data.get("demo_login", False)
        if not isinstance(demo, bool):
            raise ConfigurationError("server: demo_login must be true or false")
        hosts = tuple(_strings(data.get("allowed_hosts", []), "hosts"))
        pages = tuple(_strings(data.get("allowed_origins", []), "origins"))
        taken = {"cors_origins", "allowed_hosts", "allowed_origins", "demo_login"}
        known = {k: data[k] for k in _KEYS - taken if k in data}
        return cls(
            cors_origins=tuple(origins),
            allowed_hosts=hosts,
            allowed_origins=pages,
            demo_login=demo,
            **known,
        )

    def check_bind(self, *, authenticated: bool) -> None:
        """Refuse a public address when no identity is configured (anyone who can reach the
        port would act without a token), or when the demo login is on (anyone who can reach
        the port could sign in as any demo user by name, identity or not)."""
        if is_loopback(self.host):
            return
        if self.demo_login:
            raise ConfigurationError(
                f"refusing to listen on {self.host} with demo_login on: anyone who can reach "
                "the port could sign in as any demo user; set demo_login = false or listen on "
                "127.0.0.1"
            )
        if authenticated:
            return
        raise ConfigurationError(
            f"refusing to listen on {self.host}: no [identity] is configured, so requests "
            "could not be authenticated; add an [identity] table (issuer, audience, keys; "
            "see docs/server.md) or listen on 127.0.0.1"
        )


def _strings(value: object, what: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"server: allowed_{what} must be a list of strings")
    return list(value)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses; an unknown name counts as public."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_tables(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The top-level tables of a workspace file (TOML, or YAML holding the same tables)."""
    return read_table(path, "workspace file")
