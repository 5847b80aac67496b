"""The ``execute`` and ``process`` tools: run a command in the sandbox over the principal's
view (``Workspace.run``, ``docs/sandbox.md``), or start it in the background and then list,
read, feed, write back and kill it; in both tool styles.

They exist only for a principal whose policy grants the ``execute`` action somewhere (an
operator action: ``*`` in a rule does not grant it). What a command changes comes back through
the guard as the principal; the output says which paths came back and which were refused, and
why. A background process is its starter's only: another principal's call by its id answers
"not found".

Approval judges a command by its effects (``docs/sandbox.md``): the session's
:class:`~bastion.agents.tools.Approval` is asked before a command runs in a folder its path
rules reach (or before every command, when it names ``execute``), and again for each changed
path its rules protect, before that change is written back; a refused change stays out and is
reported under ``refused``. Input sent to a background process is audited (``send``).
"""

from __future__ import annotations

import signal as signals
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from bastion.agents.tools.outputs import fit_text, ok
from bastion.agents.tools.session import ApprovalDeniedError, ApprovalRequest, ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool, tool
from bastion.core.errors import OperationError
from bastion.core.paths import VPath
from bastion.sandbox import RunResult
from bastion.sandbox.approval import Effect, Review
from bastion.sandbox.background import ProcessInfo
from bastion.workspace.operations import DECLARED, MAX_STDIN, operation

__all__ = [
    "EXECUTE_TOOLS",
    "MAX_BACKGROUND_TIMEOUT",
    "MAX_STDIN",
    "MAX_TIMEOUT",
    "execute",
    "process",
]

_RUN, _START = operation("run"), operation("start_process")
MAX_TIMEOUT = int(_RUN.bounds("timeout")[1] or 0)
"""Most seconds one call may run (the wall limit the model may ask for): ``run``'s."""
MAX_BACKGROUND_TIMEOUT = int(_START.bounds("timeout")[1] or 0)
"""Most seconds a background process may live: ``start_process``'s."""
FOREGROUND_TIMEOUT = int(_RUN.default("timeout"))
BACKGROUND_TIMEOUT = int(_START.default("timeout"))
"""The timeouts when the model gives none: the declared defaults."""
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


@tool(
    needs={Capability.EXECUTE},
    changes=True,
    paths=("cwd",),
    command="command",
    derive={"cwd": "run.cwd", "stdin": "run.stdin"},
)
async def execute(
    s: ToolSession,
    command: Annotated[
        Word | list[Word],
        Field(description="Shell line (run by sh -c), or program and arguments"),
        AfterValidator(_command),
    ],
    cwd: str = DECLARED,
    timeout: Annotated[
        int | None,
        Field(
            ge=1,
            le=MAX_BACKGROUND_TIMEOUT,
            description="Seconds before it is killed: 30, or 600 in the background by default; "
            "at most 300 unless background",
        ),
    ] = None,
    stdin: str | None = DECLARED,
    background: Annotated[
        bool, Field(description="Start it and return its id at once; see the process tool")
    ] = False,
) -> Output:
    """Run a command in a sandbox over the files you may read; files it writes come back as
    your changes. Returns exit_code, stdout, stderr, changed and refused paths."""
    review = change_review(s, {"command": command, "cwd": cwd})
    if background:
        info = await s.workspace.start_process(
            command,
            cwd=cwd,
            stdin=stdin,
            timeout=timeout or BACKGROUND_TIMEOUT,
            limits=s.run_limits,
            review=review,
        )
        return ok(**process_fields(info))
    timeout = timeout or FOREGROUND_TIMEOUT
    if timeout > MAX_TIMEOUT:
        raise OperationError(
            f"timeout over {MAX_TIMEOUT} s; start a longer command with background=true"
        )
    result = await s.workspace.run(
        command, cwd=cwd, stdin=stdin, timeout=timeout, limits=s.run_limits, review=review
    )
    return ok(**result_fields(result, s))


@tool(needs={Capability.EXECUTE}, changes=True)
async def process(
    s: ToolSession,
    action: Annotated[
        Literal["list", "read", "send", "kill", "write_back"],
        Field(description="list yours; read output; send input; kill; write_back changes"),
    ],
    process_id: Annotated[str | None, Field(max_length=64, description="Its id")] = None,
    stream: Literal["stdout", "stderr"] = "stdout",
    offset: Annotated[int, Field(ge=0, description="Byte to read from (next_offset)")] = 0,
    input: Annotated[str, Field(max_length=MAX_STDIN, description="Text to send")] = "",
    close_input: bool = False,
) -> Output:
    """Manage your background commands (execute with background=true): list them, read their
    output from an offset, send input, write their changes back, or kill them."""
    ws = s.workspace
    if action == "list":
        return ok(processes=[process_fields(p) for p in await ws.processes()])
    if process_id is None:
        raise OperationError(f"{action} needs a process_id; list your processes to see them")
    if action == "read":
        chunk = await ws.read_output(
            process_id, stream=stream, offset=offset, limit=s.limits.max_chars
        )
        return ok(
            process_id=process_id,
            stream=stream,
            text=chunk.text,
            offset=chunk.offset,
            next_offset=chunk.next_offset,
            total=chunk.total,
            skipped=chunk.skipped or None,
            running=chunk.running,
        )
    if action in ("send", "write_back"):
        # approved as an execute call would be: input to a shell is a command line, and a
        # write-back changes what a command may change
        await s.approve(execute, {"command": input}, [])
    if action == "send":
        taken = await ws.send_input(process_id, input, close=close_input)
        return ok(process_id=process_id, sent=taken, of=len(input.encode("utf-8")))
    if action == "kill":
        return ok(**process_fields(await ws.kill_process(process_id)))
    return ok(**process_fields(await ws.write_back(process_id)))


def change_review(s: ToolSession, arguments: dict[str, Any]) -> Review | None:
    """The reviewer of a command's changes: each path the session's approval protects is
    asked about (:class:`~bastion.agents.tools.ApprovalRequest` with ``change`` set) before
    it is written back; a refusal keeps it out. ``None`` when no path rule is set."""
    approval = s.approval
    if approval is None or not approval.paths:
        return None
    principal = s.principal

    async def review(effect: Effect) -> str | None:
        if not approval.protects(VPath.parse(effect.path)):
            return None
        request = ApprovalRequest(
            execute.name, dict(arguments), (effect.path,), principal, change=effect.kind
        )
        try:
            await approval.ask(request)
        except ApprovalDeniedError:
            return (
                f"not written back: this {effect.kind} of a protected path was not approved; "
                "ask the user"
            )
        return None

    return review


def process_fields(info: ProcessInfo) -> dict[str, Any]:
    """A background process as flat fields (what came back so far, and how it ended)."""
    return {
        "process_id": info.id,
        "command": info.command,
        "cwd": info.cwd,
        "state": info.state,
        "exit_code": info.exit_code,
        "signal": _signal_name(info.signal),
        "limit": info.limit,
        "duration": info.duration,
        "stdout_bytes": info.stdout_bytes,
        "stderr_bytes": info.stderr_bytes,
        "changed": list(info.changed) or None,
        "deleted": list(info.deleted) or None,
        "refused": dict(info.refused) or None,
    }


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


EXECUTE_TOOLS: tuple[Tool, ...] = (execute, process)
"""The tools added to either style when the principal may run commands."""
