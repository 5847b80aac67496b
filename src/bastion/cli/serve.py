"""``bastion serve``: the HTTP API, MCP per token and the web page over one workspace.

``--config FILE`` serves that workspace, and without it ``./bastion.toml`` as every other
command reads it (its ``[server]`` and ``[identity]`` tables configure the server, see
``docs/server.md``); ``--demo`` serves the demo corpus with the demo login on. It listens on
loopback unless told otherwise, and refuses a public address when no ``[identity]`` is
configured. The port is bound before the server starts, so a port in use is one clear line
and a non-zero exit, not a traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

__all__ = ["serve_command"]


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
def serve_command(config: Path | None, demo: bool, host: str | None, port: int | None) -> None:
    """Serve a governed workspace over HTTP: /v1 API, /mcp, and the web page at /."""
    import uvicorn

    from bastion.cli.common import CONFIG_NAME
    from bastion.core.errors import BastionError
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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        with _app(config, host, port) as (app, settings):
            sock = _bind(settings.host, settings.port)
            bound = sock.getsockname()[1]
            click.echo(
                f"bastion server on http://{settings.host}:{bound}/ "
                f"(API /v1, OpenAPI /openapi.json, MCP /mcp)",
                err=True,
            )
            if not is_loopback(settings.host) and not settings.allowed_hosts:
                click.echo(
                    "note: only requests naming localhost, 127.0.0.1 or [::1] are answered; "
                    "list this server's names in [server] allowed_hosts (docs/server.md)",
                    err=True,
                )
            server = uvicorn.Server(
                uvicorn.Config(
                    app,
                    host=settings.host,
                    port=bound,
                    access_log=False,
                    server_header=False,
                    log_level="warning",
                )
            )
            with sock:
                server.run(sockets=[sock])
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc


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
def _app(config: Path | None, host: str | None, port: int | None) -> Iterator[tuple[Any, Any]]:
    from bastion.server.loading import ServerFile, opened_app
    from bastion.server.settings import ServerSettings

    def pick(settings: ServerSettings) -> ServerSettings:
        changes: dict[str, Any] = {}
        if host is not None:
            changes["host"] = host
        if port is not None:
            changes["port"] = port
        return dataclasses.replace(settings, **changes)

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
