"""What every command shares: its options, the workspace file and who is asking (output is
in ``bastion.cli.output``, errors and exit codes in ``bastion.cli.errors``).

Every command takes the same options (:func:`common_options`):

- ``--config FILE``: the workspace file; without it, ``bastion.toml`` in the current folder;
- ``--as USER`` (a user of ``--users FILE``, else of the file's ``[users]``, else of the
  demo: :data:`DEFAULT_USERS`) or ``--token JWT`` / ``$BASTION_TOKEN`` verified with
  ``--identity FILE``; with neither, the file's ``[principal]``, else the workspace's owner;
- ``--json``: results as JSON on stdout; errors as ``{"error": CODE, "message": ...}`` on
  stderr (``bastion.cli.errors.ERROR_CODES``, one table for the whole error tree);
- ``-q`` (no notes, no progress) and ``-v`` / ``-vv`` (log lines on stderr).

The options are stored on the click context (:func:`options`), so a command
function takes only its own arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bastion.cli.errors import CliError
from bastion.cli.logs import configure_logging
from bastion.core.principal import Principal

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_USERS",
    "Options",
    "acting",
    "common_options",
    "config_path",
    "load_config",
    "options",
    "resolve_principal",
    "settings",
    "users_of",
]

CONFIG_NAME = "bastion.toml"
"""The workspace file a command reads from the current folder when ``--config`` is not given."""

DEFAULT_USERS: dict[str, Principal] = {
    "admin": Principal.of("admin", roles={"admin"}, clearance="restricted"),
    "engineer": Principal.of("engineer", roles={"engineer"}, clearance="internal"),
    "guest": Principal.of("guest"),
}
"""Who ``--as`` may name without ``--users`` or a ``[users]`` table: three generic users and
the people of the demo story (``bastion.demo.corpus``), added below."""


def _demo_users() -> dict[str, Principal]:
    from bastion.demo.corpus import users

    return {user.id: user.principal for user in users()}


_GENERIC = ", ".join(DEFAULT_USERS)
DEFAULT_USERS.update(_demo_users())
DEMO_USER_NAMES = f"{_GENERIC}, and the demo's people: " + ", ".join(
    name for name in DEFAULT_USERS if name not in _GENERIC.split(", ")
)


@dataclass
class Options:
    """The shared options of one command line."""

    config: Path | None = None
    user: str | None = None
    users_file: Path | None = None
    token: str | None = None
    identity: Path | None = None
    as_json: bool = False
    quiet: bool = False
    verbose: int = 0
    file_identity: Any = None
    """The workspace file's ``[identity]`` table (checked), which verifies ``--token`` when
    no ``--identity`` is given."""


def options() -> Options:
    """The shared options of the command running now."""
    ctx = click.get_current_context()
    found = ctx.find_object(Options)
    return found if found is not None else Options()


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Store an option's value on the context's :class:`Options` (not passed to the command)."""
    opts = ctx.ensure_object(Options)
    assert param.name is not None
    if param.name == "verbose":
        configure_logging(value, opts.quiet)
    setattr(opts, param.name, value)
    return value


_F = TypeVar("_F", bound=Callable[..., Any])

_EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def common_options(*, identity: bool = True) -> Callable[[_F], _F]:
    """Add the shared options to a command; ``identity=False`` leaves out who asks (``init``)."""

    def decorate(f: _F) -> _F:
        shared: list[Callable[[_F], _F]] = [
            click.option(
                "--config",
                type=_EXISTING_FILE,
                default=None,
                expose_value=False,
                callback=_keep,
                help=f"The workspace file (default: ./{CONFIG_NAME} when there is one).",
            ),
            click.option(
                "--json",
                "as_json",
                is_flag=True,
                expose_value=False,
                callback=_keep,
                help="Results as JSON on stdout; errors as a JSON object on stderr.",
            ),
            click.option(
                "-q",
                "--quiet",
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_keep,
                help="No notes and no progress on stderr.",
            ),
            click.option(
                "-v",
                "--verbose",
                count=True,
                expose_value=False,
                callback=_keep,
                help="Log lines on stderr (-vv: debug).",
            ),
        ]
        if identity:
            shared += [
                click.option(
                    "--as",
                    "user",
                    default=None,
                    metavar="USER",
                    expose_value=False,
                    callback=_keep,
                    help="Act as USER of --users, else of the file's [users], else of the "
                    f"defaults: {DEMO_USER_NAMES}.",
                ),
                click.option(
                    "--users",
                    "users_file",
                    type=_EXISTING_FILE,
                    default=None,
                    expose_value=False,
                    callback=_keep,
                    help="TOML or YAML file: user -> tenant, roles, clearance, tags.",
                ),
                click.option(
                    "--token",
                    default=None,
                    envvar="BASTION_TOKEN",
                    metavar="JWT",
                    expose_value=False,
                    callback=_keep,
                    help="Act as the subject of a JWT verified with --identity "
                    "(also $BASTION_TOKEN).",
                ),
                click.option(
                    "--identity",
                    type=_EXISTING_FILE,
                    default=None,
                    expose_value=False,
                    callback=_keep,
                    help="Identity configuration for --token (keys, issuer, audience, claims).",
                ),
            ]
        for option in reversed(shared):
            f = option(f)
        return f

    return decorate


# -- the workspace file and who is asking ------------------------------------------------------


def config_path(*, required: bool = True) -> Path | None:
    """``--config``, else ``./bastion.toml`` when it exists; ``None`` (or an error when
    ``required``) when there is neither."""
    given = options().config
    if given is not None:
        return given
    here = Path(CONFIG_NAME)
    if here.is_file():
        return here
    if required:
        raise CliError(
            f"no {CONFIG_NAME} in this folder; run `bastion init` to write one, or pass "
            "--config FILE",
            code="no_config",
        )
    return None


def settings(*, required: bool = True) -> WorkspaceConfig | None:
    """The checked workspace file of this command (see :func:`config_path`)."""

    path = config_path(required=required)
    return load_config(path) if path is not None else None


def load_config(path: Path) -> WorkspaceConfig:
    """The workspace of the file at ``path``. A file that ``bastion serve`` reads too keeps
    its ``[server]`` and ``[identity]`` tables, checked by their own parsers
    (``bastion.server.loading``); ``[identity]`` then verifies ``--token``."""
    from bastion.config import WorkspaceConfig

    if not server_tables(path):
        return WorkspaceConfig.from_file(path)
    from bastion.server.loading import ServerFile

    found = ServerFile.read(path)
    options().file_identity = found.identity
    workspace: WorkspaceConfig = found.workspace
    return workspace


def server_tables(path: Path) -> bool:
    from bastion.configfile import read_table
    from bastion.core.errors import ConfigurationError

    try:
        data = read_table(path, "workspace file")
    except ConfigurationError:
        return False  # the workspace file's own loader says what is wrong
    return bool({"server", "identity"} & set(data))


def users_of(config: WorkspaceConfig | None) -> Mapping[str, Principal]:
    """Who ``--as`` may name: ``--users FILE``, else the file's ``[users]``, else
    :data:`DEFAULT_USERS`."""
    from bastion.config import load_users

    opts = options()
    if opts.users_file is not None:
        return load_users(opts.users_file)
    if config is not None and config.users:
        return config.users
    return DEFAULT_USERS


def resolve_principal(config: WorkspaceConfig | None, *, default: bool = True) -> Principal | None:
    """Who this command acts for: the verified ``--token``, else ``--as USER``, else the
    file's ``default_user`` (unless ``default`` is False: ``index`` runs as the owner, ``mcp``
    serves the file's ``[principal]``); ``None`` when none is named (the file's
    ``[principal]``, else the owner)."""
    opts = options()
    if opts.token is not None and opts.user is not None:
        raise click.UsageError("say who asks with --as USER or --token JWT, not both (one of them)")
    if opts.token is not None:
        return _from_token(opts.token, opts.identity, config)
    if opts.user is None:
        return _default_user(config) if default else None
    users = users_of(config)
    principal = users.get(opts.user)
    if principal is None:
        known = ", ".join(sorted(users)) or "(none)"
        raise CliError(f"unknown user {opts.user!r}; known users: {known}", code="unknown_user")
    return principal


def _default_user(config: WorkspaceConfig | None) -> Principal | None:
    """The file's ``default_user`` (said in one line on stderr), else ``None``."""
    if config is None or config.default_user is None:
        return None
    principal = config.users[config.default_user]
    opts = options()
    if not opts.quiet and not opts.as_json:
        click.echo(
            f"acting as {principal.id} (default_user of the workspace file); "
            "--as USER acts as another",
            err=True,
        )
    return principal


def _from_token(token: str, identity: Path | None, config: WorkspaceConfig | None) -> Principal:
    """The principal of a verified JWT; every refusal is one line that shows no claim."""
    from bastion.governance.identity import JwtVerifier
    from bastion.governance.identity_config import IdentityConfig

    # The workspace's policy, as the server uses: its role graph and classification order
    # decide the clearance a token's roles bring (the default policy's would differ).
    policy = config.policy if config is not None else None
    if identity is not None:
        verifier = JwtVerifier(IdentityConfig.from_file(identity), policy=policy)
    elif options().file_identity is not None:
        verifier = JwtVerifier(options().file_identity, policy=policy)
    else:
        raise click.UsageError(
            "--token needs --identity FILE (keys, issuer, audience) or an [identity] table "
            "in the workspace file"
        )
    return verifier.authenticate(token).principal


def acting(config: WorkspaceConfig | None, principal: Principal | None) -> Principal | None:
    """The principal a workspace built from ``config`` acts for (``None``: the owner)."""
    if principal is not None:
        return principal
    return config.principal if config is not None else None
