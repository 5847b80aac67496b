"""``bastion run``: a command in the sandbox over the acting principal's view, as the
``execute`` tool runs it (``bastion.agents.tools.execute``, ``docs/sandbox.md``).

The options are the tool's own parameters, read from its declaration (name, type, bounds,
help), never written here a second time: a parameter added to the tool is an option here. The
values go through the tool's validation and the tool's call, so the command line and an agent
get the same checks and the same result. One option is the operator's, not the tool's:
``--network DOMAIN`` (repeated) lets the command reach those names through Bastion's egress
proxy (``RunLimits(network=[...])``). ``COMMAND...``: one word is a shell line (run by
``sh -c``), several are a program and its arguments (no shell).

Printed: the command's stdout on stdout, its stderr on stderr, and a note per path that came
back or was refused; with ``--json``, the tool's result. The exit status is the command's own
(``128 + N`` when signal N ended it); errors before it runs are 1, usage errors 2.
"""

from __future__ import annotations

import typing
from typing import Any

import annotated_types
import click
from pydantic.fields import FieldInfo

from bastion.agents.tools.execute import execute
from bastion.agents.tools.spec import Tool
from bastion.cli.common import common_options, resolve_principal, settings
from bastion.cli.output import emit, note
from bastion.cli.session import open_session

__all__ = ["run_command"]

_ARGUMENT = "command"
_LEFT_OUT = {
    "background": "a background process lives in the process that started it, and a "
    "command line's ends when the command returns"
}
"""Parameters of the tool that are no option here, and why."""
_UNCAPPED = 10**9
"""Characters of output the command line shows (the sandbox's own output cap applies)."""


def _option(name: str, info: FieldInfo) -> click.Option:
    """The click option of one tool parameter: its type, bounds and help from the tool."""
    annotation = info.annotation
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(kinds) == 1 and type(None) in typing.get_args(annotation):
        annotation = kinds[0]  # optional: None is "not given", the tool's default
    flag = "--" + name.replace("_", "-")
    help_text = info.description or ""
    if annotation is bool:
        return click.Option([flag, name], is_flag=True, default=None, help=help_text)
    if annotation is int:
        low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
        high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
        kind = click.IntRange(
            low if isinstance(low, int) else None, high if isinstance(high, int) else None
        )
        return click.Option([flag, name], type=kind, default=None, help=help_text)
    if annotation is str:
        default = info.default if isinstance(info.default, str) else None
        shown = f" (default {default})" if default else ""
        return click.Option([flag, name], default=None, help=help_text + shown)
    raise TypeError(f"the {name} parameter of the tool has no command-line form")  # a new type


def _options_of(tool: Tool) -> list[click.Option]:
    fields = tool.args.model_fields
    return [_option(n, i) for n, i in fields.items() if n != _ARGUMENT and n not in _LEFT_OUT]


def _run(command: tuple[str, ...], network: tuple[str, ...], **given: Any) -> int:
    from bastion.agents.tools.outputs import OutputLimits
    from bastion.agents.tools.session import ToolSession
    from bastion.sandbox.result import RunLimits
    from bastion.workspace.blocking import run_blocking

    config = settings()
    assert config is not None
    arguments: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    arguments[_ARGUMENT] = command[0] if len(command) == 1 else list(command)
    values = execute.parse(arguments)
    limits = RunLimits(network=list(network)) if network else None
    with open_session(config, resolve_principal(config)) as session:
        tools = ToolSession(
            session.ws.aio, limits=OutputLimits(max_chars=_UNCAPPED), run_limits=limits
        )
        result: dict[str, Any] = run_blocking(_call(tools, values))
    emit(result, "")
    if not _json():
        click.echo(result.get("stdout", ""), nl=False)
        click.echo(result.get("stderr", ""), nl=False, err=True)
        _notes(result)
    return _status(result)


async def _call(tools: Any, values: dict[str, Any]) -> dict[str, Any]:
    return await execute.fn(tools, **values)


def _json() -> bool:
    from bastion.cli.common import options

    return options().as_json


def _notes(result: dict[str, Any]) -> None:
    for path in result.get("changed") or ():
        note(f"changed: {path}")
    for path in result.get("deleted") or ():
        note(f"deleted: {path}")
    for path, why in (result.get("refused") or {}).items():
        note(f"refused: {path}: {why}")
    if result.get("limit"):
        note(f"stopped: the {result['limit']} limit")


def _status(result: dict[str, Any]) -> int:
    """The command's exit code; 128 + N when signal N ended it."""
    code = result.get("exit_code")
    if isinstance(code, int):
        return code
    import signal

    name = result.get("signal")
    try:
        return 128 + int(signal.Signals[name]) if isinstance(name, str) else 1
    except KeyError:
        return 128 + int(name) if isinstance(name, str) and name.isdigit() else 1


def _command() -> click.Command:
    params: list[click.Parameter] = [click.Argument([_ARGUMENT], nargs=-1, required=True)]
    params += _options_of(execute)
    params.append(
        click.Option(
            ["--network", "network"],
            multiple=True,
            metavar="DOMAIN",
            help="Let the command reach DOMAIN (also *.DOMAIN, DOMAIN:PORT) through Bastion's "
            "proxy, every request audited; repeat for more. Without it: no network.",
        )
    )
    command = click.Command(
        "run",
        callback=_run,
        params=params,
        help=(execute.description.split("\n")[0])
        + "\n\nCOMMAND: one word is a shell line (sh -c), several a program and its "
        "arguments (put -- before them). Exit status: the command's.",
        context_settings={"allow_interspersed_args": False},
    )
    return common_options()(command)


run_command = _command()
"""The ``bastion run`` command (registered by ``bastion.cli``)."""
