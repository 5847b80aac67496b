"""``bastion serve``: the HTTP API, MCP per token and the web page over one workspace.

``--config FILE`` serves that workspace, and without it ``./bastion.toml`` as every other
command reads it (its ``[server]`` and ``[identity]`` tables configure the server, see
``docs/server.md``); ``--demo`` serves the demo corpus with the demo login on. It listens on
loopback unless told otherwise, and refuses a public address when no ``[identity]`` is
configured. The port is bound before the server starts, so a port in use is one clear line
and a non-zero exit, not a traceback.

Log lines go to stderr, as text or one JSON object per line (``--log-format``, else the
file's ``[server] log_format``): the request lines by default, errors only with ``-q``, debug
with ``-v``. ``SIGTERM``/``SIGINT`` stop it gracefully (:mod:`bastion.server.lifecycle`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from bastion.server.settings import ServerSettings

__all__ = ["serve_command"]

log = logging.getLogger("bastion.server")


@click.command("serve")
@click.option(
    "--config",
    "config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A workspace file (bastion.toml) with [server] and [identity] tables.",
)
@click.option("--demo", is_flag=True, help="Serve the demo corpus, with the demo login on.")
@click.option(
    "--host",
    default=None,
    help="Address to listen on (default: the file's, else 127.0.0.1). On a public address, "
    "name the server in [server] allowed_hosts: requests naming any other host are refused.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port (default 8765).")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Log lines as text or one JSON object per line (default: the file's [server] "
    "log_format, else text).",
)
@click.option("-q", "--quiet", is_flag=True, help="Log errors only (no request lines).")
@click.option("-v", "--verbose", count=True, help="Log debug lines too.")
def serve_command(
    config: Path | None,
    demo: bool,
    host: str | None,
    port: int | None,
    log_format: str | None,
    quiet: bool,
    verbose: int,
) -> None:
    """Serve a governed workspace over HTTP: /v1 API, /mcp, and the web page at /."""
    from bastion.cli.common import CONFIG_NAME
    from bastion.core.errors import BastionError
    from bastion.server import lifecycle, logs
    from bastion.server.settings import is_loopback

    if demo and config is not None:
        raise click.UsageError("give either --config FILE or --demo, not both")
    if not demo and config is None:
        here = Path(CONFIG_NAME)
        if not here.is_file():
            raise click.UsageError(
                f"no {CONFIG_NAME} in this folder; run `bastion init` to write one, or pass "
                "--config FILE or --demo"
            )
        config = here
    level = logs.level_for(verbose, quiet)
    undo: list[Callable[[], None]] = []

    def settled(settings: ServerSettings) -> None:
        """Log as told before the workspace opens (its index repair logs too)."""
        undo.append(logs.configure(settings.log_format, level))

    chosen = {"host": host, "port": port, "log_format": log_format}
    try:
        with _app(config, chosen, settled) as (app, settings):
            sock = _bind(settings.host, settings.port)
            bound = sock.getsockname()[1]
            log.info(
                "bastion server on http://%s:%d/ (API /v1, OpenAPI /openapi.json, MCP /mcp)",
                settings.host,
                bound,
            )
            if not is_loopback(settings.host) and not settings.allowed_hosts:
                log.warning(
                    "only requests naming localhost, 127.0.0.1 or [::1] are answered; "
                    "list this server's names in [server] allowed_hosts (docs/server.md)"
                )
            with sock:
                lifecycle.run(
                    app,
                    sock,
                    grace=settings.shutdown_grace_s,
                    log_level="info" if level <= logging.DEBUG else "warning",
                )
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        for done in undo:
            done()


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (as uvicorn binds it), or one clear line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} on {host} is in use by another program; stop it or pass --port N"
            ) from None
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def _app(
    config: Path | None,
    chosen: dict[str, Any],
    settled: Callable[[ServerSettings], None],
) -> Iterator[tuple[Any, ServerSettings]]:
    """The app, and its settings with the command line's ``chosen`` ones (those not ``None``)
    over the file's; ``settled`` is told the settings before the workspace opens."""
    from bastion.server.loading import ServerFile, opened_app
    from bastion.server.settings import ServerSettings

    def pick(settings: ServerSettings) -> ServerSettings:
        changed = dataclasses.replace(
            settings, **{k: v for k, v in chosen.items() if v is not None}
        )
        settled(changed)
        return changed

    if config is None:
        from bastion.server.demo import demo_app

        settings = pick(ServerSettings(demo_login=True))
        settings.check_bind(authenticated=False)
        with tempfile.TemporaryDirectory(prefix="bastion-serve-demo-") as tmp:
            yield demo_app(tmp, settings=settings), settings
        return
    server = ServerFile.read(config)
    server = dataclasses.replace(server, settings=pick(server.settings))
    with opened_app(server) as app:
        yield app, server.settings
