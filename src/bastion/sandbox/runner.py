"""One ``Workspace.run`` call: build the view, run the command in bubblewrap, bring the changes
back through the guard, and remove the view, whatever happened.

:class:`Prepared` (the view and bubblewrap's arguments) and :meth:`Prepared.bring_back` (the
written-bytes check, then the guarded write-back) are shared with the background processes
(``bastion.sandbox.background``): one path from a command's view to the workspace.
"""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bastion.core.paths import VPath
from bastion.sandbox.approval import Review, screen
from bastion.sandbox.bwrap import (
    NETWORK_NAMES,
    SYSTEM_NAMES,
    bwrap_binary,
    command_line,
    sandbox_ids,
)
from bastion.sandbox.egress import Recorder
from bastion.sandbox.gate import EgressGate
from bastion.sandbox.port import SandboxWorkspace
from bastion.sandbox.result import RunLimits, RunResult, SandboxError
from bastion.sandbox.seccomp import filter_fd
from bastion.sandbox.spawn import Tree, spawn
from bastion.sandbox.tree import remove_tree
from bastion.sandbox.usage import entries, held_bytes, scratch_fd
from bastion.sandbox.view import Change, Snapshot, diff, materialize, written
from bastion.sandbox.writeback import Applied, write_back

__all__ = ["Prepared", "argv_of", "prepare", "run_in_sandbox"]


def argv_of(command: Sequence[str] | str) -> list[str]:
    """The argument list of ``command``: as is, or ``/bin/sh -c`` for a string."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("the command is empty; give a program and its arguments")
    return argv


@dataclass
class Prepared:
    """A command's view on the host and bubblewrap's arguments to run it over that view."""

    folder: Path
    """The private host folder (the view is ``folder/view``); removed by :meth:`remove`."""
    snap: Snapshot
    args: list[str]
    limits: RunLimits
    seccomp: int | None
    review: Review | None = None
    """Asked about each change before it is written back (``bastion.sandbox.approval``)."""
    gate: EgressGate | None = None
    """The egress proxy, when the network is an allow-list (``bastion.sandbox.gate``)."""
    tree: Tree | None = None
    """The running sandbox, once started (its processes are looked at for the written bytes,
    and it is what a kill ends)."""
    scratch: int | None = None
    """A descriptor of the running sandbox's ``/tmp`` tmpfs, once seen (to count entries)."""

    @property
    def fds(self) -> tuple[int, ...]:
        """Descriptors bubblewrap inherits (bound folders, the seccomp filter, the gate's)."""
        gate = () if self.gate is None else self.gate.fds
        seccomp = () if self.seccomp is None else (self.seccomp,)
        return (*self.snap.bound.values(), *seccomp, *gate)

    def start_egress(self) -> None:
        """Start the egress gate (when there is one) as bubblewrap starts."""
        if self.gate is not None:
            self.gate.open()

    def written(self, tree: Tree | None = None) -> int:
        """Bytes the command has taken in the view so far (polled for the limit): what the
        view holds, and the files there that its processes (of ``tree``, or the one this
        started) hold open or mapped after deleting their names."""
        total = written(self.snap)
        tree = tree or self.tree
        if tree is not None and tree.pidns is not None:
            total += held_bytes(tree.pidns, self.snap.root.stat().st_dev)
        return total

    def over(self, tree: Tree | None = None) -> str | None:
        """The limit the running command is over (polled): ``"tmp"`` when ``/tmp`` holds more
        entries than ``limits.tmp_bytes`` has 4 KiB blocks (its tmpfs counts bytes, not
        files), ``"written"`` past ``limits.written_bytes``; ``None`` within both."""
        tree = tree or self.tree
        if tree is not None and tree.init_pid is not None:
            if self.scratch is None:
                self.scratch = scratch_fd(tree.init_pid, self.limits.tmp_bytes)
            if self.scratch is not None and entries(self.scratch) > self.limits.tmp_bytes // 4096:
                return "tmp"
        if self.written(tree) > self.limits.written_bytes:
            return "written"
        return None

    def close_fds(self) -> None:
        """Close the descriptors once bubblewrap holds its own (it has started) or is gone."""
        self.snap.close()
        if self.gate is not None:
            self.gate.close_child_fds()
        if self.seccomp is not None:
            os.close(self.seccomp)
            self.seccomp = None

    async def bring_back(
        self, ws: SandboxWorkspace, limit: str | None
    ) -> tuple[str | None, Applied]:
        """Write the command's changes back as ``ws``'s principal, unless ``limit`` (what
        ended the command) is set or the view holds more than ``limits.written_bytes``; then
        every change is refused with the reason. Returns the limit that applied."""
        if limit is None and await asyncio.to_thread(self.written) > self.limits.written_bytes:
            limit = "written"  # over between two polls: still nothing comes back
        if limit is not None:  # killed mid-way (files may be half-written), or too much
            changes = await asyncio.to_thread(functools.partial(diff, self.snap, read=False))
            changes = [withheld(c, limit) for c in changes]
        else:
            changes = await screen(await asyncio.to_thread(diff, self.snap), self.review)
        return limit, await write_back(ws, changes)

    async def remove(self) -> None:
        self.close_fds()
        if self.gate is not None:
            await self.gate.close()
        if self.tree is not None:
            self.tree.close()
        if self.scratch is not None:
            os.close(self.scratch)
            self.scratch = None
        await asyncio.to_thread(remove_tree, self.folder)


async def prepare(
    ws: SandboxWorkspace,
    argv: Sequence[str],
    *,
    cwd: VPath,
    env: Mapping[str, str] | None,
    limits: RunLimits,
    review: Review | None = None,
    record: Recorder | None = None,
) -> Prepared:
    """Build ``ws``'s view in a new private folder and bubblewrap's arguments to run ``argv``
    in ``cwd`` there (``review``: see :attr:`Prepared.review`; ``record``: told of each
    request to the egress proxy). On any failure nothing is left behind."""
    extra = dict(env or {})
    for key, value in extra.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable {key!r}")
    binary = await asyncio.to_thread(bwrap_binary)
    ids = sandbox_ids()
    folder = Path(tempfile.mkdtemp(prefix="bastion-sandbox-"))
    try:
        if ids is not None:
            os.chown(folder, *ids)
        view = folder / "view"
        view.mkdir(mode=0o755)
        system = NETWORK_NAMES if limits.network else SYSTEM_NAMES
        snap = await materialize(ws, view, ids, system)
        snap.read_cap = limits.written_bytes
        prepared = Prepared(folder, snap, [], limits, None, review)
        try:
            if limits.egress is not None:
                prepared.gate = EgressGate(limits.egress, record)
                extra = {**extra, **prepared.gate.env()}
            if not (view.joinpath(*cwd.parts)).is_dir():
                raise SandboxError(
                    f"{cwd} is not a folder in your view; run from a folder you can list"
                )
            prepared.seccomp = filter_fd()
            prepared.args = command_line(
                binary,
                view,
                snap.read_only,
                snap.bound,
                argv,
                str(cwd),
                extra,
                tmp_bytes=limits.tmp_bytes,
                network=limits.network is True,
                seccomp=prepared.seccomp,
                host_etc=bool(limits.network),
                extra=() if prepared.gate is None else prepared.gate.args,
            )
        except BaseException:
            prepared.close_fds()
            if prepared.gate is not None:
                await prepared.gate.close()
            raise
    except BaseException:
        await asyncio.to_thread(remove_tree, folder)
        raise
    return prepared


async def run_in_sandbox(
    ws: SandboxWorkspace,
    command: Sequence[str] | str,
    *,
    cwd: VPath,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes | None = None,
    timeout: float = 30.0,
    limits: RunLimits | None = None,
    review: Review | None = None,
    record: Recorder | None = None,
) -> RunResult:
    """Run ``command`` (an argument list, or a string for ``/bin/sh -c``) over ``ws``'s view.
    The caller has checked the ``execute`` permission on ``cwd``. ``review`` is asked about
    each change before it is written back; ``record`` is told of each request to the egress
    proxy (when ``limits.network`` is an allow-list)."""
    argv = argv_of(command)
    if timeout <= 0:
        raise ValueError("timeout must be positive (seconds)")
    chosen = limits or RunLimits()
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    prepared = await prepare(
        ws, argv, cwd=cwd, env=env, limits=chosen, review=review, record=record
    )
    try:
        prepared.start_egress()
        try:
            outcome = await spawn(prepared.args, data, timeout, chosen, prepared.fds, prepared.over)
        finally:
            prepared.close_fds()
        limit, applied = await prepared.bring_back(ws, outcome.limit)
    finally:
        await prepared.remove()
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


def withheld(change: Change, limit: str) -> Change:
    """``change`` refused because ``limit`` ended the command (``"killed"``: its owner killed
    a background process)."""
    if change.kind == "refuse":
        return change
    if limit == "written":
        why = (
            "the command wrote more than its written-bytes limit; write less, or ask an "
            "operator for a larger limit"
        )
    elif limit == "killed":
        why = "the process was killed; write its changes back before killing it"
    else:
        why = f"the command was killed by the {limit} limit; run it again"
    return Change(change.path, "refuse", shown=change.shown, reason=f"not written back: {why}")
