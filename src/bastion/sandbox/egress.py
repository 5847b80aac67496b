"""Egress by allow-list: which names a sandboxed command may reach through Bastion's proxy.

``RunLimits(network=["pypi.org", "*.pythonhosted.org"])`` keeps the command in a network
namespace of its own (no route out) and gives it ``HTTP_PROXY``/``HTTPS_PROXY`` pointing at a
proxy Bastion runs for that command (``bastion.sandbox.proxy``); the proxy admits a request only
when its host is on the list, and audits every request, admitted or refused.

An entry is ``name``, ``*.name`` (any name below it, not ``name`` itself) or either with
``:port`` (only that port; without one, any port). Names are compared lower-cased, without a
trailing dot. An IP address is admitted only when the list names that address.

The proxy resolves names itself. By default (:func:`public_addresses`) a name must resolve to
public addresses only: an allowed name that points at a loopback, private, link-local
(cloud metadata) or otherwise reserved address is refused, so an allow-list entry cannot be
turned into a way into the host's own network (an address the list names itself is reached
as named). A :data:`Resolver` given to :class:`Egress`
replaces that (tests map their names to loopback servers with one).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bastion.core.errors import ConfigurationError, OperationError

__all__ = ["Egress", "EgressRefused", "Recorder", "Resolver", "public_addresses"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port)`` to the addresses to connect to; raises :class:`EgressRefused` to refuse."""

Recorder = Callable[[str, bool, str], None]
"""Called once per proxied request: ``(target, allowed, reason)``, ``target`` being
``host:port``; the workspace turns it into an audit record (``egress``)."""

_NAME = re.compile(r"^(?:\*\.)?[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")


class EgressRefused(OperationError):
    """A request the allow-list or the resolver refuses (answered 403 by the proxy)."""


def _host(text: str) -> str:
    host = text.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    wildcard: bool
    port: int | None

    def admits(self, host: str, port: int) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


def _entry(text: str) -> _Entry:
    if not isinstance(text, str):
        raise ConfigurationError(f"network allow-list entry {text!r} is not a string")
    raw = text.strip()
    port: int | None = None
    name = raw
    head, sep, tail = raw.rpartition(":")
    if sep and tail.isdigit() and not head.endswith(":"):  # not a bare IPv6 address
        name, port = head, int(tail)
        if not 0 < port < 65536:
            raise ConfigurationError(f"network allow-list entry {text!r}: port out of range")
    host = _host(name)
    wildcard = host.startswith("*.")
    if _ip(host) is None and not _NAME.match(host):
        raise ConfigurationError(
            f"network allow-list entry {text!r} is not a domain, *.domain or IP address "
            "(with an optional :port)"
        )
    return _Entry(host[2:] if wildcard else host, wildcard, port)


@dataclass(frozen=True, kw_only=True)
class Egress:
    """The allow-list of one command's network, and how its names are resolved."""

    allow: Sequence[str] = ()
    """The entries as given (kept as a tuple) (see the module's text)."""
    resolve: Resolver | None = field(default=None, compare=False)
    """How the proxy resolves an admitted name (``None``: :func:`public_addresses`)."""
    _entries: tuple[_Entry, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allow, str):
            raise ConfigurationError("the network allow-list is one string; give a list of domains")
        object.__setattr__(self, "allow", tuple(self.allow))
        object.__setattr__(self, "_entries", tuple(_entry(e) for e in self.allow))

    @classmethod
    def of(cls, allow: Iterable[str]) -> Egress:
        return cls(allow=tuple(allow))

    def admits(self, host: str, port: int) -> bool:
        """True when ``host:port`` is on the list."""
        name = _host(host)
        return any(e.admits(name, port) for e in self._entries)

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for an admitted ``host``; :class:`EgressRefused` when
        the resolver refuses it."""
        name = _host(host)
        if _ip(name) is not None:
            return [name]  # an address the list names: the operator chose it
        resolve = self.resolve or public_addresses
        return await resolve(name, port)


async def public_addresses(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the host's resolver; refuse it unless every address is public
    (not loopback, private, link-local, multicast, reserved or unspecified)."""
    literal = _ip(host)
    if literal is not None:
        found = [str(literal)]
    else:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise EgressRefused(f"{host} does not resolve ({exc.strerror or exc})") from None
        found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in found:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if not ip.is_global:
            raise EgressRefused(
                f"{host} resolves to a non-public address ({address}); the proxy does not "
                "reach the host's own network"
            )
    if not found:
        raise EgressRefused(f"{host} does not resolve")
    return found
