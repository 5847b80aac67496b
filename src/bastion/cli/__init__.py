"""The ``bastion`` command line: a thin shell over the library.

Every command takes ``--config``, ``--as``/``--users``, ``--token``/``--identity``,
``--json`` and ``-q``/``-v`` (``bastion.cli.common``); see ``docs/cli.md``.
"""

from __future__ import annotations

import click

from bastion.cli.common import common_options, options
from bastion.cli.errors import BastionGroup
from bastion.cli.output import emit

__all__ = ["main"]


@click.group(
    cls=BastionGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit codes: 0 ok, 1 error (grep: no match), 2 usage (grep: an error), "
    "3 an index run skipped files, 4 an answer failed its verification. See docs/cli.md.",
)
@click.version_option(package_name="bastion", prog_name="bastion")
def main() -> None:
    """Bastion: a governed workspace for AI agents.

    Every command reads ./bastion.toml (or --config FILE) and acts for --as USER or
    --token JWT; --json prints results (and errors) as JSON.
    """


@main.command()
@common_options(identity=False)
def demo() -> None:
    """Run a short scripted tour of a governed workspace (no set-up needed); `bastion init
    --demo` writes a workspace to explore the same way."""
    from bastion.demo import run_demo

    if not options().as_json:
        run_demo(click.echo)
        return
    lines: list[str] = []
    run_demo(lines.append)
    emit({"lines": lines}, "")


def _register() -> None:
    from bastion.cli.admin import token_group, user_group
    from bastion.cli.ask import ask_command
    from bastion.cli.audit import audit_command
    from bastion.cli.changes import CHANGE_COMMANDS
    from bastion.cli.eval_answers import eval_answers_command
    from bastion.cli.explain import explain_command
    from bastion.cli.files import FILE_COMMANDS
    from bastion.cli.knowledge import (
        eval_command,
        index_command,
        reindex_command,
        search_command,
    )
    from bastion.cli.mcp import mcp_command
    from bastion.cli.overlay import overlay_group
    from bastion.cli.run import run_command
    from bastion.cli.serve import serve_command
    from bastion.cli.setup import config_group, init_command

    main.add_command(init_command)
    main.add_command(config_group)

    for command in FILE_COMMANDS:
        main.add_command(command)
    main.add_command(index_command)
    main.add_command(search_command)
    main.add_command(eval_command)
    main.add_command(eval_answers_command)
    main.add_command(reindex_command)
    main.add_command(ask_command)
    main.add_command(mcp_command)
    main.add_command(run_command)
    main.add_command(audit_command)
    main.add_command(explain_command)
    main.add_command(serve_command)
    for command in CHANGE_COMMANDS:
        main.add_command(command)
    main.add_command(overlay_group)
    main.add_command(token_group)
    main.add_command(user_group)


_register()
