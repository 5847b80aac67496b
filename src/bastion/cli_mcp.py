"""``bastion mcp``: serve a workspace's tools to an MCP client, over stdio or streamable HTTP.

The workspace comes from ``--mount`` options (folders on disk, or ``memory`` for a scratch
area), from a ``--config`` file, or, with neither, from the demo (sample documents read-only at
``/docs``, a scratch area, a write-only outbox, a keyword index). Over stdio nothing but the
protocol is written to stdout; messages go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import click

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
    "--config",
    "config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TOML or YAML file with mounts, policy, principal and index (see docs/mcp.md).",
)
@click.option(
    "--policy",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Policy file (TOML or YAML). Default: allow everything the mount scopes allow.",
)
@click.option("--principal", default=None, help="Who the agent acts for (default: agent).")
@click.option("--role", "roles", multiple=True, help="A role of the principal. Repeatable.")
@click.option("--index", "index_dir", type=click.Path(path_type=Path), help="Index folder.")
@click.option("--keyword-only", is_flag=True, help="Open the index without embeddings.")
@click.option("--style", type=click.Choice(["granular", "intent"]), default="granular")
@click.option(
    "--permission",
    "permissions",
    multiple=True,
    type=click.Choice(["read", "write", "list", "search"]),
    help="Offer only tools for these permissions. Repeatable.",
)
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--demo", is_flag=True, help="Serve the demo workspace (the default with no mounts).")
def mcp_command(
    mounts: Sequence[str],
    config: Path | None,
    policy: Path | None,
    principal: str | None,
    roles: Sequence[str],
    index_dir: Path | None,
    keyword_only: bool,
    style: str,
    permissions: Sequence[str],
    transport: str,
    host: str,
    port: int,
    demo: bool,
) -> None:
    """Serve a governed workspace's tools over MCP (stdio or streamable HTTP)."""
    from bastion.agents.mcp import serve_http, serve_stdio
    from bastion.agents.tools import Toolset
    from bastion.errors import BastionError

    if demo and (mounts or config):
        raise click.UsageError("--demo takes no --mount or --config")
    try:
        with _workspace(mounts, config, policy, principal, roles, index_dir, keyword_only) as ws:
            shape = cast(Literal["granular", "intent"], style)
            toolset = Toolset(ws, style=shape, permissions=permissions or None)
            if transport == "http":
                click.echo(f"bastion MCP server on http://{host}:{port}/mcp", err=True)
                asyncio.run(serve_http(toolset, host=host, port=port))
            else:
                asyncio.run(serve_stdio(toolset))
    except BastionError as exc:
        raise click.ClickException(str(exc)) from exc


@contextlib.contextmanager
def _workspace(
    mounts: Sequence[str],
    config: Path | None,
    policy_file: Path | None,
    principal_id: str | None,
    roles: Sequence[str],
    index_dir: Path | None,
    keyword_only: bool,
) -> Iterator[Any]:
    from bastion import FileLimits, Policy, Principal, Workspace, load_policy

    if not mounts and config is None:
        with _demo() as ws:
            yield ws
        return
    data = _read_config(config) if config is not None else {}
    base = config.parent if config is not None else Path.cwd()
    table = [_mount_from_table(m, base) for m in data.get("mounts", [])]
    table += [_mount_from_option(m) for m in mounts]
    if policy_file is not None:
        policy = load_policy(policy_file)
    elif "policy" in data:
        policy = Policy.from_dict(data["policy"])
    else:
        blocked = frozenset({".git", ".bastion"})
        policy = Policy.allow_all(limits=FileLimits(blocked_segments=blocked))
    who = dict(data.get("principal", {}))
    if principal_id:
        who["id"] = principal_id
    if roles:
        who["roles"] = list(roles)
    agent = Principal.of(
        str(who.pop("id", "agent")),
        roles=who.pop("roles", ()),
        tenant=str(who.pop("tenant", "default")),
        clearance=str(who.pop("clearance", "public")),
    )
    index = index_dir or (base / data["index"] if "index" in data else None)
    knowledge = None
    if index is not None:
        from bastion.knowledge.service import Knowledge

        dense = not (keyword_only or data.get("keyword_only", False))
        knowledge = Knowledge.open(index, embedder="local" if dense else None)
    ws = Workspace(table, policy=policy, principal=agent, knowledge=knowledge)
    try:
        yield ws
    finally:
        if knowledge is not None:
            knowledge.close()


@contextlib.contextmanager
def _demo() -> Iterator[Any]:
    from bastion.demo import build_demo_workspace
    from bastion.knowledge.service import Knowledge

    with tempfile.TemporaryDirectory(prefix="bastion-mcp-demo-") as tmp:
        knowledge = Knowledge()  # keyword-only, in memory: starts at once
        ws = build_demo_workspace(Path(tmp) / "docs", knowledge)
        ws.index_directory("/docs")
        yield ws.aio


def _read_config(path: Path) -> dict[str, Any]:
    from bastion.errors import ConfigurationError

    try:
        if path.suffix.lower() == ".toml":
            with path.open("rb") as fh:
                data: Any = tomllib.load(fh)
        else:
            import yaml

            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot load {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} must be a mapping at the top level")
    unknown = set(data) - {"mounts", "policy", "principal", "index", "keyword_only"}
    if unknown:
        raise ConfigurationError(f"{path}: unknown keys {', '.join(sorted(unknown))}")
    return data


def _mount_from_option(spec: str) -> Any:
    prefix, sep, rest = spec.partition("=")
    if not sep or not prefix or not rest:
        raise click.BadParameter(f"{spec!r}: use PREFIX=DIR[:SCOPE]", param_hint="--mount")
    where, scope = rest, "read_only"
    head, colon, tail = rest.rpartition(":")
    if colon and tail in _SCOPES:
        where, scope = head, tail
    return _mount(prefix, where, scope, "", Path.cwd())


def _mount_from_table(table: Any, base: Path) -> Any:
    from bastion.errors import ConfigurationError

    if not isinstance(table, dict) or "prefix" not in table or "path" not in table:
        raise ConfigurationError("each mount needs 'prefix' and 'path' (a folder or 'memory')")
    return _mount(
        str(table["prefix"]),
        str(table["path"]),
        str(table.get("scope", "read_only")),
        str(table.get("description", "")),
        base,
    )


def _mount(prefix: str, where: str, scope: str, description: str, base: Path) -> Any:
    from bastion import LocalStore, MemoryStore, Mount
    from bastion.errors import ConfigurationError

    if where == "memory":
        return Mount.of(prefix, MemoryStore(), scope, description=description)
    folder = (base / where).resolve()
    if not folder.is_dir():
        raise ConfigurationError(f"mount {prefix}: {where} is not a folder")
    return Mount.of(prefix, LocalStore(folder), scope, description=description)
