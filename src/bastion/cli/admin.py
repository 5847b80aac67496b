"""``bastion token revoke`` and ``bastion user add|passwd|disable``: what an operator changes
in the shared state of a workspace's servers (``[server] shared_state``,
:mod:`bastion.server.shared`). Every server process of the workspace honours a revocation
within a second."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from bastion.cli.common import common_options, config_path
from bastion.cli.output import emit

if TYPE_CHECKING:
    from bastion.server.accounts import Accounts
    from bastion.server.shared import SharedState

__all__ = ["token_group", "user_group"]


def _shared() -> SharedState:
    """The shared state the file's ``[server]`` names (only that table is read: revoking
    needs none of the identity's secrets)."""
    from bastion.core.errors import ConfigurationError
    from bastion.server.settings import ServerSettings, read_tables
    from bastion.server.shared import SharedState

    path = config_path()
    assert path is not None
    raw = read_tables(path).get("server", {})
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{path}: server: must be a table")
    settings = ServerSettings.from_dict(raw)
    return SharedState(settings.shared_state, base=path.resolve().parent)


@click.group("token")
def token_group() -> None:
    """Tokens the workspace's servers accept: revoke one, or all of a subject's."""


@token_group.command("revoke")
@click.option("--id", "jti", default=None, metavar="JTI", help="The token's id (its jti claim).")
@click.option(
    "--subject",
    default=None,
    metavar="SUB",
    help="Every token of this subject issued until now (its sub claim).",
)
@common_options(identity=False)
def revoke_command(jti: str | None, subject: str | None) -> None:
    """Refuse a token (--id) or every token of a subject issued until now (--subject), in
    every server process of the workspace, from within a second."""
    if (jti is None) == (subject is None):
        raise click.UsageError("give exactly one of --id JTI or --subject SUB")
    value = jti if jti is not None else subject
    if not value or not value.strip() or len(value) > 1024:
        raise click.UsageError("the token id or subject must be 1 to 1024 characters")
    shared = _shared()
    if jti is not None:
        shared.revoke_token(jti)
        emit({"revoked": {"jti": jti}}, f"revoked token {jti}")
    else:
        assert subject is not None
        shared.revoke_subject(subject)
        emit(
            {"revoked": {"subject": subject}},
            f"revoked every token of {subject} issued until now",
        )


@click.group("user")
def user_group() -> None:
    """Local accounts of the workspace's servers (who each one is: the file's [users])."""


_STDIN = click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from the first line of standard input (no prompt).",
)


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    value: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


def _accounts() -> Accounts:
    from bastion.server.accounts import Accounts

    return Accounts(_shared())


@user_group.command("add")
@click.argument("name")
@_STDIN
@common_options(identity=False)
def user_add(name: str, password_stdin: bool) -> None:
    """Add the account NAME (a name of the file's [users]) with a password."""
    from bastion.cli.common import load_config

    path = config_path()
    assert path is not None
    if name not in load_config(path).users:
        raise click.UsageError(
            f"{name} is not in the workspace's [users]: add it there first (tenant, roles, "
            "clearance), then its account"
        )
    _accounts().add(name, _password(password_stdin))
    emit({"added": name}, f"added account {name}")


@user_group.command("passwd")
@click.argument("name")
@_STDIN
@common_options(identity=False)
def user_passwd(name: str, password_stdin: bool) -> None:
    """Set the password of NAME (enabling it again); its sessions so far end."""
    _accounts().passwd(name, _password(password_stdin))
    emit({"changed": name}, f"changed the password of {name}; its sessions so far are revoked")


@user_group.command("disable")
@click.argument("name")
@common_options(identity=False)
def user_disable(name: str) -> None:
    """Stop NAME from signing in; its sessions so far end (passwd enables it again)."""
    _accounts().disable(name)
    emit({"disabled": name}, f"disabled {name}; its sessions so far are revoked")
