"""``bastion serve``: the HTTP API, MCP per token and the web page over one workspace.

``--config bastion.toml`` serves that workspace (its ``[server]`` and ``[identity]`` tables
configure the server, see ``docs/server.md``); ``--demo`` serves the demo corpus with the demo
login on. It listens on loopback unless told otherwise, and refuses a public address when no
``[identity]`` is configured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
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

    from bastion.core.errors import BastionError
    from bastion.server.settings import is_loopback

    if demo == (config is not None):
        raise click.UsageError("give either --config FILE or --demo")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        with _app(config, host, port) as (app, settings):
            click.echo(
                f"bastion server on http://{settings.host}:{settings.port}/ "
                f"(API /v1, OpenAPI /openapi.json, MCP /mcp)",
                err=True,
            )
            if not is_loopback(settings.host) and not settings.allowed_hosts:
                click.echo(
                    "note: only requests naming localhost, 127.0.0.1 or [::1] are answered; "
                    "list this server's names in [server] allowed_hosts (docs/server.md)",
                    err=True,
                )
            uvicorn.run(
                app,
                host=settings.host,
                port=settings.port,
                access_log=False,
                server_header=False,
                log_level="warning",
            )
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc


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
