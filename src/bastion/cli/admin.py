"""``bastion token revoke``: what an operator changes in the shared state of a workspace's
servers (``[server] shared_state``, :mod:`bastion.server.shared`). Every server process of the
workspace honours a revocation within a second."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bastion.cli.common import common_options, config_path
from bastion.cli.output import emit

if TYPE_CHECKING:
    from bastion.server.shared import SharedState

__all__ = ["token_group"]


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
