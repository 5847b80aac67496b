"""Who a request says it is for (``Host``) and which page sent it (``Origin``), checked on
every request before anything else runs: the API, ``/mcp``, the page and its static files.

*DNS rebinding*: a page on ``evil.example`` makes its own name resolve to ``127.0.0.1`` and
calls the server as ``evil.example``; the browser counts that as the page's own origin and
lets it read the answers (the demo login's token, for one). The request's ``Host`` then names
the attacker's domain, so a server that answers only to its own names refuses it (``421``).
The loopback names (``localhost``, ``127.0.0.1``, ``[::1]``, any port) are always allowed:
only a page served by this machine can name them. Others are listed in ``[server]
allowed_hosts``.

*Cross-origin requests*: a request whose ``Origin`` is neither this server (the same name and
port as its ``Host``) nor listed (``allowed_origins``, ``cors_origins``) is refused (``403``)
whatever its method: a GET from another site's page has no use here, and one rule for every
method leaves no method to slip through (docs/decisions/). A request without ``Origin`` (a
program, a top-level navigation) is left to the token.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from bastion.core.errors import ConfigurationError
from bastion.server.errors import ApiError, error_response

__all__ = [
    "LOOPBACK_HOSTS",
    "HostGuard",
    "HostName",
    "Origin",
    "parse_allowed_host",
    "parse_allowed_origin",
]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Always allowed, on any port."""

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?")
_DEFAULT_PORT = {"http": 80, "https": 443}


@dataclass(frozen=True)
class HostName:
    """A host name (lower case, no trailing dot; IPv6 in brackets) and an optional port."""

    name: str
    port: int | None = None

    @classmethod
    def parse(cls, value: str) -> HostName | None:
        """``name``, ``name:port``, ``[v6]`` or ``[v6]:port``; ``None`` when malformed."""
        text = value.strip().lower()
        port: int | None = None
        if text.startswith("["):
            inside, bracket, rest = text[1:].partition("]")
            if not bracket:
                return None
            try:
                address = ipaddress.IPv6Address(inside)
            except ValueError:
                return None
            name, tail = f"[{address.compressed}]", rest
        else:
            name, colon, after = text.partition(":")
            tail = colon + after
        if tail:
            if not tail.startswith(":") or not tail[1:].isdigit() or len(tail) > 6:
                return None
            port = int(tail[1:])
            if not 0 < port <= 65535:
                return None
        if not name.startswith("["):
            name = name.removesuffix(".")
            if not name or len(name) > 253:
                return None
            if not all(_LABEL.fullmatch(label) for label in name.split(".")):
                return None
        return cls(name, port)

    def admits(self, other: HostName) -> bool:
        """True when ``other`` (a request's) is this allowed name: the same name, and the
        same port unless this one names none."""
        return self.name == other.name and (self.port is None or self.port == other.port)


@dataclass(frozen=True)
class Origin:
    """``scheme://host[:port]`` of a page, its port made explicit."""

    scheme: str
    host: HostName

    @classmethod
    def parse(cls, value: str) -> Origin | None:
        """``None`` for ``null``, a path, credentials, or anything but http(s)."""
        try:
            parts = urlsplit(value.strip())
        except ValueError:
            return None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORT or parts.path not in ("", "/"):
            return None
        if parts.query or parts.fragment or "@" in parts.netloc:
            return None
        host = HostName.parse(parts.netloc)
        if host is None:
            return None
        return cls(scheme, HostName(host.name, host.port or _DEFAULT_PORT[scheme]))

    def is_of(self, host: HostName) -> bool:
        """True when a request with this ``Host`` comes from its own page (same name and
        port; a ``Host`` without a port is on the scheme's default one). The scheme is not
        compared: a proxy that ends TLS forwards ``https`` pages over plain HTTP."""
        port = host.port if host.port is not None else _DEFAULT_PORT[self.scheme]
        return host.name == self.host.name and port == self.host.port


def parse_allowed_host(value: object) -> HostName:
    """One ``allowed_hosts`` entry (a :class:`ConfigurationError` otherwise)."""
    if not isinstance(value, str) or value.strip() in ("", "*"):
        raise ConfigurationError(
            'server: allowed_hosts entries are host names such as "bastion.example.com" '
            '(optionally with ":port"); "*" is refused: name each host'
        )
    text = value.strip()
    if ":" in text and not text.startswith("[") and text.count(":") > 1:
        text = f"[{text}]"  # a bare IPv6 address
    found = HostName.parse(text)
    if found is None:
        raise ConfigurationError(
            f"server: allowed_hosts entry {value[:80]!r} is not a host name "
            '(such as "bastion.example.com" or "10.0.0.5:8765")'
        )
    return found


def parse_allowed_origin(value: object) -> Origin:
    """One ``allowed_origins`` or ``cors_origins`` entry."""
    found = Origin.parse(value) if isinstance(value, str) else None
    if found is None:
        raise ConfigurationError(
            'server: origins are written "https://name" or "http://name:port" (no path; '
            '"*" and "null" are refused)'
        )
    return found


_MISDIRECTED = ApiError(
    421,
    "misdirected_request",
    "this server does not answer to that host name; its operator lists its names in "
    "[server] allowed_hosts",
)
_FOREIGN = ApiError(
    403,
    "forbidden_origin",
    "requests from another site's pages are refused; the operator may list a page's origin "
    "in [server] allowed_origins",
)


class HostGuard:
    """Refuses a request whose ``Host`` is not an allowed name (``421``), or whose
    ``Origin`` is neither the request's own site nor an allowed origin (``403``)."""

    def __init__(
        self, app: ASGIApp, *, hosts: Iterable[HostName], origins: Iterable[Origin]
    ) -> None:
        self.app = app
        self.hosts = (*(HostName(name) for name in LOOPBACK_HOSTS), *hosts)
        self.origins = frozenset(origins)

    def refusal(self, scope: Scope) -> ApiError | None:
        """Why this request is refused, or ``None``."""
        hosts = [v for k, v in scope.get("headers", ()) if k.lower() == b"host"]
        origins = [v for k, v in scope.get("headers", ()) if k.lower() == b"origin"]
        if len(hosts) != 1:
            return _MISDIRECTED
        host = HostName.parse(hosts[0].decode("latin-1"))
        if host is None or not any(allowed.admits(host) for allowed in self.hosts):
            return _MISDIRECTED
        if not origins:
            return None
        if len(origins) > 1:
            return _FOREIGN
        origin = Origin.parse(origins[0].decode("latin-1"))
        if origin is None or not (origin.is_of(host) or origin in self.origins):
            return _FOREIGN
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = self.refusal(scope)
            if refused is not None:
                if scope["type"] == "websocket":  # pragma: no cover - no websocket route
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await error_response(refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)
