"""``bastion mcp``: serve a workspace's tools to an MCP client, over stdio or streamable HTTP.

The workspace comes from a ``--config`` workspace file (``bastion.toml``, the one schema
``load_workspace`` reads: mounts by URL with their labels and timeouts, the policy, the index,
the principal), from ``--mount`` options (folders on disk, or ``memory`` for a scratch area;
turned into entries of that same schema), or from the demo with ``--demo`` (sample documents
read-only at ``/docs``, a scratch area, a write-only outbox, a keyword index); with none of
them, and no ``bastion.toml`` here, it refuses (never the demo unasked). Over stdio
nothing but the protocol is written to stdout; messages go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import click

from bastion.cli.common import common_options, config_path, load_config, options, resolve_principal
from bastion.cli.errors import CliError
from bastion.cli.output import Progress, note, shown
from bastion.core.principal import Principal

__all__ = ["mcp_command"]

_SCOPES = ("read_only", "read_write", "write_only")


@click.command("mcp")
@click.option(
    "--mount",
    "mounts",
    multiple=True,
    metavar="PREFIX=DIR[:SCOPE]",
    help="Mount a folder (or 'memory') at PREFIX; SCOPE is read_only (default), read_write "
    "or write_only. Repeatable.",
)
@click.option(
    "--policy",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Policy file (TOML or YAML) for --mount. Default: allow everything the mount scopes "
    "allow.",
)
@click.option(
    "--principal",
    default=None,
    help="Who the agent acts for (default: --as/--token, else the file's [principal], else agent).",
)
@click.option(
    "--role", "roles", multiple=True, help="A role of that principal (not the file's). Repeatable."
)
@click.option("--tenant", default=None, help="The tenant of that principal (default: default).")
@click.option(
    "--clearance",
    default=None,
    help="The clearance of that principal: the highest classification it reads (default: public).",
)
@click.option("--index", "index_dir", type=click.Path(path_type=Path), help="Index folder.")
@click.option("--keyword-only", is_flag=True, help="Open the index without embeddings.")
@click.option(
    "--style",
    type=click.Choice(["granular", "intent"]),
    default="granular",
    show_default=True,
    help="One tool per operation (granular) or a few intent-level tools (intent).",
)
@click.option(
    "--permission",
    "permissions",
    multiple=True,
    type=click.Choice(["read", "write", "list", "search"]),
    help="Offer only tools for these permissions. Repeatable.",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="Serve over stdin/stdout (an MCP client starts it) or streamable HTTP.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address for --transport http."
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
    help="Port for --transport http.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Serve the demo workspace (sample documents, in memory).",
)
@common_options()
def mcp_command(
    mounts: Sequence[str],
    policy: Path | None,
    principal: str | None,
    roles: Sequence[str],
    tenant: str | None,
    clearance: str | None,
    index_dir: Path | None,
    keyword_only: bool,
    style: str,
    permissions: Sequence[str],
    transport: str,
    host: str,
    port: int,
    demo: bool,
) -> None:
    """Serve a governed workspace's tools over MCP (stdio or streamable HTTP), acting for
    --as USER, --token JWT, or the principal that --principal, --role, --tenant and
    --clearance name."""
    from bastion.agents.tools import Toolset

    if transport == "http":
        from bastion.agents.mcp import serve_http  # the MCP SDK (its extra): HTTP only
    else:
        from bastion.agents.mcp_stdio import serve_stdio  # no SDK: starts faster

    config = options().config
    if demo and (mounts or config):
        raise click.UsageError("--demo takes no --mount or --config")
    if config is not None and (mounts or policy):
        raise click.UsageError(
            "--config takes no --mount or --policy: put the mounts and the policy in the file"
        )
    if config is None and not mounts and not demo:
        config = config_path(required=False)  # ./bastion.toml
        if config is None:  # never the demo unasked: an agent would work on sample files
            raise CliError(
                "no bastion.toml here: pass --config FILE or --mount PREFIX=DIR, or --demo "
                "to serve the demo workspace",
                code="no_config",
            )
    chosen = _principal(config, principal, roles, tenant, clearance)
    progress = Progress("indexing")  # the index on open: what changed since the last run
    with _workspace(
        mounts,
        config,
        policy,
        principal,
        roles,
        index_dir,
        keyword_only,
        principal_=chosen,
        progress=progress,
    ) as ws:
        shape = cast(Literal["granular", "intent"], style)
        toolset = Toolset(ws, style=shape, permissions=permissions or None)
        if transport == "http":
            note(f"bastion MCP server on http://{host}:{port}/mcp for {shown(ws.principal)}")
            asyncio.run(serve_http(toolset, host=host, port=port))
        else:
            asyncio.run(serve_stdio(toolset))


def _principal(
    config: Path | None,
    principal_id: str | None,
    roles: Sequence[str],
    tenant: str | None,
    clearance: str | None,
) -> Principal | None:
    """The principal the options name: ``--as``/``--token``, or ``--principal``, ``--role``,
    ``--tenant`` and ``--clearance`` (never both kinds); ``None`` when they name none."""
    settings = load_config(config) if config is not None else None
    named = resolve_principal(settings, default=False)
    parts = principal_id is not None or roles or tenant is not None or clearance is not None
    if named is not None:
        if parts:
            raise click.UsageError(
                "--as/--token name the whole principal: drop --principal, --role, --tenant "
                "and --clearance"
            )
        return named
    if not parts:
        return None
    if clearance is not None and settings is not None:
        order = settings.policy.classifications.order
        if clearance not in order:
            raise click.BadParameter(
                f"{clearance!r} is not a classification of the policy: {', '.join(order)}",
                param_hint="--clearance",
            )
    return Principal.of(
        principal_id or "agent",
        roles=roles,
        tenant=tenant or "default",
        clearance=clearance or "public",
    )


@contextlib.contextmanager
def _workspace(
    mounts: Sequence[str],
    config: Path | None,
    policy_file: Path | None,
    principal_id: str | None,
    roles: Sequence[str],
    index_dir: Path | None,
    keyword_only: bool,
    *,
    principal_: Principal | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Iterator[Any]:
    """The workspace to serve, built by the one workspace-file schema, closed on leaving;
    acting for ``principal_`` when given (else as the options and the file say). Its index
    is brought up to date on open (``[knowledge] index_on_open``), reported to ``progress``."""
    from bastion.config import KnowledgeConfig, folder_config

    if not mounts and config is None:
        with _demo() as ws:
            yield ws if principal_ is None else ws.with_principal(principal_)
        return
    settings = (
        load_config(config)
        if config is not None
        else folder_config([_mount_from_option(m) for m in mounts], policy_file=policy_file)
    )
    changes: dict[str, Any] = {}
    if principal_ is not None:
        changes["principal"] = principal_
    elif principal_id is not None or roles:
        # Options name the whole principal: an id given here never inherits the file's
        # clearance, tenant or roles.
        changes["principal"] = Principal.of(principal_id or "agent", roles=roles)
    elif settings.principal is None:
        changes["principal"] = Principal.of("agent")
    embedder = "none" if keyword_only else None
    if index_dir is not None:
        folder = index_dir.resolve()
        changes["knowledge"] = KnowledgeConfig(folder, embedder or "local")
    elif settings.knowledge is not None and embedder is not None:
        changes["knowledge"] = dataclasses.replace(settings.knowledge, embedder=embedder)
    with dataclasses.replace(settings, **changes).opened(progress=progress) as ws:
        if isinstance(progress, Progress):
            progress.close()
        yield ws


@contextlib.contextmanager
def _demo() -> Iterator[Any]:
    from bastion.demo import build_demo_workspace
    from bastion.knowledge.engine import Knowledge

    with tempfile.TemporaryDirectory(prefix="bastion-mcp-demo-") as tmp:
        knowledge = Knowledge()  # keyword-only, in memory: starts at once
        ws = build_demo_workspace(Path(tmp) / "docs", knowledge)
        ws.index_directory("/docs")
        yield ws.aio


def _mount_from_option(spec: str) -> tuple[str, str, str]:
    """``PREFIX=DIR[:SCOPE]`` as ``(prefix, folder, scope)`` (the folder may be ``memory``)."""
    prefix, sep, rest = spec.partition("=")
    if not sep or not prefix or not rest:
        raise click.BadParameter(f"{spec!r}: use PREFIX=DIR[:SCOPE]", param_hint="--mount")
    where, scope = rest, "read_only"
    head, colon, tail = rest.rpartition(":")
    if colon and tail in _SCOPES:
        where, scope = head, tail
    return prefix, where, scope
