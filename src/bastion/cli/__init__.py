"""The ``bastion`` command line: a thin shell over the library."""

from __future__ import annotations

import click

from bastion import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bastion")
def main() -> None:
    """Bastion: a governed workspace for AI agents."""


@main.command()
def demo() -> None:
    """Run a short scripted tour of a governed workspace (no set-up needed)."""
    from bastion.demo import run_demo

    run_demo(click.echo)


def _register() -> None:
    from bastion.cli.ask import ask_command
    from bastion.cli.knowledge import (
        eval_command,
        index_command,
        reindex_command,
        search_command,
    )
    from bastion.cli.mcp import mcp_command

    main.add_command(index_command)
    main.add_command(search_command)
    main.add_command(eval_command)
    main.add_command(reindex_command)
    main.add_command(ask_command)
    main.add_command(mcp_command)


_register()
