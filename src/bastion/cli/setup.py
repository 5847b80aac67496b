"""``bastion init`` writes a commented starter ``bastion.toml``; ``bastion config check``
validates one and prints its resolved mounts and who may do what.

The starter holds every table a workspace file may have (mounts, policy, users, knowledge,
audit) and loads with ``load_workspace`` as written. ``init --demo`` lays out the demo
corpus (two companies, labelled documents) beside it and names the demo's people as users.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from bastion.cli.common import CONFIG_NAME, common_options, config_path, load_config, options
from bastion.cli.errors import CliError
from bastion.cli.output import emit, note, principal_dict

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig
    from bastion.core.principal import Principal

__all__ = ["STARTER", "config_group", "init_command"]

STARTER = """\
# bastion.toml: a governed workspace (see docs/configuration.md and docs/cli.md).
# Every `bastion` command run in this folder reads this file; elsewhere pass --config.

# Where operations are recorded (JSON lines); `bastion audit` reads it back.
audit = ".bastion/audit.jsonl"

# Who the command line acts as when no --as USER or --token names anyone (a user of [users]).
default_user = "alice"

# The search index. embedder = "none": keyword search (BM25) only, starts at once;
# "local": the packaged model adds vector and hybrid search. Fill it with `bastion index`;
# `bastion mcp`, `bastion serve` and load_workspace index what changed when they open it.
# It remembers these mounts and this embedder: to change them, `bastion reindex --rebuild`.
# index = "sqlite": one file, in the core install; "lancedb" needs the lancedb extra.
[knowledge]
folder = ".bastion/index"
embedder = "none"
index = "sqlite"
index_on_open = true

# The change journal: every write, edit, move and delete, with the content before and after,
# so `bastion changes`, `diff`, `undo`, `checkpoint` and `restore` can review and take them back
# (docs/changes.md). A SQLite file every process on this machine shares.
[journal]
path = ".bastion/journal.db"
max_age_days = 30

# Mounts: a store named by URL at a path prefix, its scope and the labels its documents get
# unless their own front matter says otherwise. Relative paths start at this file's folder.
[[mounts]]
prefix = "/docs"
url = "file:docs"
scope = "read_only"
description = "Reference documents"
labels = { tenant = "acme", classification = "public" }

[[mounts]]
prefix = "/scratch"
url = "file:scratch"
scope = "read_write"
description = "Working notes"
labels = { tenant = "acme", classification = "internal" }

# The policy: first matching rule wins; no match is a deny (docs/policy.md).
[policy]
classifications = ["public", "internal", "confidential", "restricted"]
rules = [
  { effect = "allow", actions = ["read", "list", "search"], paths = ["/**"] },
  { effect = "allow", actions = ["write", "delete"], paths = ["/scratch/**"], roles = ["editor"] },
  { effect = "allow", actions = ["audit", "reindex"], paths = ["/**"], roles = ["admin"] },
]

[policy.roles]                    # role = [roles it inherits]
reader = []
editor = ["reader"]
admin = ["editor"]

# Who `bastion mcp` (and load_workspace without principal=) acts for: the agent, not a person.
[principal]
id = "agent"
tenant = "acme"
roles = ["editor"]
clearance = "internal"

# Who `--as USER` may name: tenant, roles and clearance (the highest classification read).
[users.alice]
tenant = "acme"
roles = ["admin"]
clearance = "restricted"

[users.bob]
tenant = "acme"
roles = ["editor"]
clearance = "internal"

[users.guest]
tenant = "acme"
roles = ["reader"]
clearance = "public"
"""
"""The starter ``bastion init`` writes."""

_DEMO_HEAD = """\
# bastion.toml: the demo workspace (written by `bastion init --demo`).
# Two companies' documents, each labelled in its front matter (tenant, classification,
# roles); who reads what is decided by those labels. Try:
#   bastion ls --as ana /larkspur
#   bastion index && bastion search --as mei "salary bands"
#   bastion audit --outcome refused

audit = ".bastion/audit.jsonl"

[knowledge]
folder = ".bastion/index"
embedder = "none"                 # "local" for vector and hybrid search
index = "sqlite"                  # "lancedb" with the lancedb extra
"""


def _demo_config() -> str:
    from bastion.demo.corpus import role_hierarchy, users

    tenants = sorted({u.tenant for u in users()})
    lines = [_DEMO_HEAD]
    for tenant in tenants:
        lines += [
            "[[mounts]]",
            f'prefix = "/{tenant}"',
            f'url = "file:corpus/{tenant}"',
            'scope = "read_only"',
            f'description = "documents of tenant {tenant}"',
            f'labels = {{ tenant = "{tenant}" }}',
            "",
        ]
    lines += [
        "# Every action on every path (executives also read their tenant's audit log and repair",
        "# the index): the documents' labels alone decide who reads what.",
        "[policy]",
        'rules = [{ effect = "allow", actions = ["*", "audit", "reindex"], paths = ["/**"], '
        'roles = ["executive"] },',
        '         { effect = "allow", actions = ["*"], paths = ["/**"] }]',
        "",
        "[policy.roles]",
    ]
    lines += [f"{role} = {_toml_list(parents)}" for role, parents in role_hierarchy().items()]
    lines.append("")
    for user in users():
        lines += [
            f"[users.{user.id}]                   # {user.about}",
            f'tenant = "{user.tenant}"',
            f"roles = {_toml_list(sorted(user.roles))}",
            f'clearance = "{user.clearance}"',
            "",
        ]
    return "\n".join(lines)


def _toml_list(items: Any) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


@click.command("init")
@click.argument(
    "folder", type=click.Path(file_okay=False, path_type=Path), default=Path(), required=False
)
@click.option("--demo", is_flag=True, help="Lay out the demo corpus and its users beside it.")
@click.option("--force", is_flag=True, help=f"Replace an existing {CONFIG_NAME}.")
@common_options(identity=False)
def init_command(folder: Path, demo: bool, force: bool) -> None:
    """Write a commented starter bastion.toml in FOLDER (default: here), with the folders
    its mounts name."""
    target = folder / CONFIG_NAME
    if target.exists() and not force:
        raise CliError(f"{target} already exists; pass --force to replace it", code="exists")
    folder.mkdir(parents=True, exist_ok=True)
    if demo:
        from bastion.demo.corpus import write_corpus

        written = write_corpus(folder / "corpus")
        text = _demo_config()
    else:
        for name in ("docs", "scratch"):
            (folder / name).mkdir(exist_ok=True)
        written = []
        text = STARTER
    target.write_text(text, encoding="utf-8")
    emit(
        {"config": str(target), "documents": len(written)},
        f"wrote {target}" + (f" and {len(written)} demo documents" if written else ""),
    )
    note("next: `bastion config check`, then `bastion index` and `bastion ls --as USER`")


@click.group("config")
def config_group() -> None:
    """Validate and explain a workspace file."""


_ACTIONS = ("read", "list", "search", "write", "delete")


def _mount_rows(config: WorkspaceConfig) -> list[dict[str, Any]]:
    rows = []
    for mount in config.mounts:
        labels = mount.labels
        rows.append(
            {
                "prefix": mount.prefix,
                "store": urlsplit(mount.url).scheme or "file",  # never the URL: it may hold a key
                "scope": mount.scope.value,
                "description": mount.description,
                "labels": {
                    "tenant": labels.tenant,
                    "classification": labels.classification,
                    "roles": sorted(labels.roles),
                    "tags": sorted(labels.tags),
                },
            }
        )
    return rows


def _may(config: WorkspaceConfig, principal: Principal) -> dict[str, list[str]]:
    """Per mount, the actions ``principal`` could be granted somewhere in it: none for a mount
    it sees nothing of (``core.visibility.prefix_hidden``, as the workspace decides), else each
    action its scope allows and the policy could allow there (``core.visibility.may_reach``). A
    document's own labels may narrow this further."""
    from bastion.core.audit import NullAuditSink
    from bastion.core.models import Action
    from bastion.core.operation import GuardContext
    from bastion.core.paths import VPath
    from bastion.core.visibility import may_reach, prefix_hidden

    ctx = GuardContext(principal, config.policy, NullAuditSink())
    grants: dict[str, list[str]] = {}
    for mount in config.mounts:
        prefix = VPath.parse(mount.prefix)
        if prefix_hidden(ctx, prefix, mount.scope, mount.labels) is not None:
            grants[mount.prefix] = []
            continue
        grants[mount.prefix] = [
            action.value
            for action in map(Action, _ACTIONS)
            if mount.scope.allows(action)
            and may_reach(ctx.policy, principal, ctx.roles, action, prefix)
        ]
    return grants


@config_group.command("check")
@common_options(identity=False)
def check_command() -> None:
    """Validate the workspace file and print its mounts and who may do what."""
    from bastion.cli.common import server_tables
    from bastion.config.check import check_file

    path = config_path()
    assert path is not None
    others = frozenset({"server", "identity"}) if server_tables(path) else frozenset()
    report = check_file(path, other_tables=others, load=load_config)
    if report.config is None:
        # every problem, one line each (stdout: what was asked for), then the error itself
        problems = report.problems
        emit({"config": str(path), "valid": False, "problems": problems}, "")
        if len(problems) == 1:
            raise CliError(problems[0], code="configuration")
        if not options().as_json:
            for problem in problems:
                click.echo(problem, err=True)
        raise CliError(
            f"{path}: {len(problems)} problems: {'; '.join(problems)}", code="configuration"
        )
    config = report.config
    people: dict[str, Principal] = dict(config.users)
    if config.principal is not None:
        people.setdefault(config.principal.id, config.principal)
    grants = {name: _may(config, who) for name, who in people.items()}
    rows = _mount_rows(config)
    data: dict[str, Any] = {
        "config": str(path),
        "valid": True,
        "mounts": rows,
        "knowledge": None
        if config.knowledge is None
        else {
            "folder": str(config.knowledge.folder),
            "embedder": config.knowledge.embedder,
            "index_on_open": config.knowledge.index_on_open,
        },
        "audit": str(config.audit) if config.audit is not None else None,
        "principal": principal_dict(config.principal) if config.principal else None,
        "users": {name: principal_dict(who) for name, who in people.items()},
        "may": grants,
    }

    def text() -> str:
        lines = [f"{path}: valid", "", "mounts:"]
        for row in rows:
            label = row["labels"]
            tags = ", ".join(
                f"{k} {v if isinstance(v, str) else ','.join(v)}" for k, v in label.items() if v
            )
            lines.append(f"  {row['prefix']:<16} {row['store']:<8} {row['scope']:<11} {tags}")
        if config.knowledge is not None:
            lines.append(f"index: {config.knowledge.folder} (embedder {config.knowledge.embedder})")
        if config.audit is not None:
            lines.append(f"audit log: {config.audit}")
        if grants:
            lines += ["", "who may do what (before each document's own labels):"]
            for name, per_mount in grants.items():
                who = people[name]
                lines.append(f"  {name}@{who.tenant} (clearance {who.clearance}):")
                for prefix, actions in per_mount.items():
                    lines.append(f"    {prefix:<16} {', '.join(actions) or '(nothing)'}")
        else:
            lines += ["", "no [users] or [principal]: add users to see who may do what"]
        return "\n".join(lines)

    emit(data, text)
