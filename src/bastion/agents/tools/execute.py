"""The ``execute`` tool: run a command in the sandbox over the principal's view
(``Workspace.run``, ``docs/sandbox.md``), in both tool styles.

It exists only for a principal whose policy grants the ``execute`` action somewhere (an
operator action: ``*`` in a rule does not grant it). What the command changes comes back
through the guard as the principal; the output says which paths came back and which were
refused, and why.
"""

from __future__ import annotations

import signal as signals
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from bastion.agents.tools.outputs import fit_text, ok
from bastion.agents.tools.session import ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool, tool
from bastion.sandbox import RunResult

__all__ = ["EXECUTE_TOOLS", "MAX_STDIN", "MAX_TIMEOUT", "execute"]

MAX_TIMEOUT = 300
"""Most seconds one call may run (the wall limit the model may ask for)."""
MAX_STDIN = 100_000
"""Most characters of ``stdin``."""
_MAX_COMMAND = 100_000
_MAX_WORDS = 1_000

Word = Annotated[str, Field(max_length=_MAX_COMMAND)]


def _command(command: str | list[str]) -> str | list[str]:
    """Refuse, before approval and before any sandbox, commands no sandbox could start."""
    words = [command] if isinstance(command, str) else command
    if not words or not words[0].strip():
        raise ValueError("empty; give a shell line, or a program and its arguments")
    if len(words) > _MAX_WORDS:
        raise ValueError(f"more than {_MAX_WORDS} arguments; put them in a file and pass that")
    if sum(len(w) for w in words) > _MAX_COMMAND:
        raise ValueError(f"over {_MAX_COMMAND} characters in all; put the long part in a file")
    if any("\x00" in w for w in words):
        raise ValueError("holds a NUL character, which no command can be given; remove it")
    return command


@tool(needs={Capability.EXECUTE}, changes=True, paths=("cwd",), command="command")
async def execute(
    s: ToolSession,
    command: Annotated[
        Word | list[Word],
        Field(description="Shell line (run by sh -c), or program and arguments"),
        AfterValidator(_command),
    ],
    cwd: Annotated[str, Field(description="Working directory, e.g. /scratch")] = "/",
    timeout: Annotated[
        int, Field(ge=1, le=MAX_TIMEOUT, description="Seconds before it is killed")
    ] = 30,
    stdin: Annotated[
        str | None, Field(max_length=MAX_STDIN, description="Text sent to input")
    ] = None,
) -> Output:
    """Run a command in a sandbox over the files you may read; files it writes come back as
    your changes. Returns exit_code, stdout, stderr, changed and refused paths."""
    result = await s.workspace.run(command, cwd=cwd, stdin=stdin, timeout=timeout)
    return ok(**result_fields(result, s))


def result_fields(result: RunResult, s: ToolSession) -> dict[str, Any]:
    """A run's result as flat fields: how it ended, its output (cut to the session's cap,
    whole in the scratch), the paths that came back and those refused with their reason."""
    fields: dict[str, Any] = {
        "exit_code": result.exit_code,
        "signal": _signal_name(result.signal),
        "duration": round(result.duration, 3),
        "limit": result.limit,
    }
    for key, text, cut in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        shaped = fit_text(
            text,
            tool=f"execute-{key}",
            limits=s.limits,
            scratch=s.scratch,
            hint="print less, or write the output to a file",
            key=key,
        )
        fields[key] = shaped[key]
        if cut or shaped.get("truncated"):
            fields[f"{key}_truncated"] = True
        if cut:
            fields[key] += "\n[... the command printed more: the sandbox kept only this much]"
        if "full_result" in shaped:
            fields[f"{key}_full"] = shaped["full_result"]
    fields["changed"] = list(result.changed)
    fields["deleted"] = list(result.deleted) or None
    fields["refused"] = dict(result.refused) or None
    return fields


def _signal_name(number: int | None) -> str | None:
    if number is None:
        return None
    try:
        return signals.Signals(number).name
    except ValueError:
        return str(number)


EXECUTE_TOOLS: tuple[Tool, ...] = (execute,)
"""The tools added to either style when the principal may run commands."""
