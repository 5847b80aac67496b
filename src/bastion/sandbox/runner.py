"""One ``Workspace.run`` call: build the view, run the command in bubblewrap, bring the changes
back through the guard, and remove the view, whatever happened."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bastion.core.paths import VPath
from bastion.sandbox.bwrap import (
    NETWORK_NAMES,
    SYSTEM_NAMES,
    bwrap_binary,
    command_line,
    sandbox_ids,
    spawn,
)
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.result import RunLimits, RunResult, SandboxError
from bastion.sandbox.seccomp import filter_fd
from bastion.sandbox.view import Change, diff, materialize, written
from bastion.sandbox.writeback import write_back

__all__ = ["run_in_sandbox"]


async def run_in_sandbox(
    ws: SandboxWorkspace,
    command: Sequence[str] | str,
    *,
    cwd: VPath,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes | None = None,
    timeout: float = 30.0,
    limits: RunLimits | None = None,
) -> RunResult:
    """Run ``command`` (an argument list, or a string for ``/bin/sh -c``) over ``ws``'s view.
    The caller has checked the ``execute`` permission on ``cwd``."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("the command is empty; give a program and its arguments")
    if timeout <= 0:
        raise ValueError("timeout must be positive (seconds)")
    chosen = limits or RunLimits()
    extra = dict(env or {})
    for key, value in extra.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable {key!r}")
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    binary = await asyncio.to_thread(bwrap_binary)
    ids = sandbox_ids()
    folder = Path(tempfile.mkdtemp(prefix="bastion-sandbox-"))
    try:
        if ids is not None:
            os.chown(folder, *ids)
        view = folder / "view"
        view.mkdir(mode=0o755)
        system = NETWORK_NAMES if chosen.network else SYSTEM_NAMES
        snap = await materialize(ws, view, ids, system)
        seccomp = filter_fd()
        try:
            if not (view.joinpath(*cwd.parts)).is_dir():
                raise SandboxError(
                    f"{cwd} is not a folder in your view; run from a folder you can list"
                )
            args = command_line(
                binary,
                view,
                snap.read_only,
                snap.bound,
                argv,
                str(cwd),
                extra,
                tmp_bytes=chosen.tmp_bytes,
                network=chosen.network,
                seccomp=seccomp,
            )
            fds = (*snap.bound.values(), *(() if seccomp is None else (seccomp,)))
            outcome = await spawn(args, data, timeout, chosen, fds, lambda: written(snap))
        finally:
            snap.close()
            if seccomp is not None:
                os.close(seccomp)
        limit = outcome.limit
        if limit is None and await asyncio.to_thread(written, snap) > chosen.written_bytes:
            limit = "written"  # over between two polls: still nothing comes back
        if limit is not None:  # killed mid-way (its files may be half-written) or too much
            changes = await asyncio.to_thread(functools.partial(diff, snap, read=False))
            changes = [_withheld(c, limit) for c in changes]
        else:
            changes = await asyncio.to_thread(diff, snap)
        applied = await write_back(ws, changes)
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)
    return RunResult(
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        duration=outcome.duration,
        stdout=outcome.stdout.decode("utf-8", "replace"),
        stderr=outcome.stderr.decode("utf-8", "replace"),
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
        limit=limit,
        changed=tuple(applied.changed),
        deleted=tuple(applied.deleted),
        refused=applied.refused,
    )


def _withheld(change: Change, limit: str) -> Change:
    if change.kind == "refuse":
        return change
    why = (
        "the command wrote more than its written-bytes limit; write less, or ask an "
        "operator for a larger limit"
        if limit == "written"
        else f"the command was killed by the {limit} limit; run it again"
    )
    return Change(change.path, "refuse", shown=change.shown, reason=f"not written back: {why}")
