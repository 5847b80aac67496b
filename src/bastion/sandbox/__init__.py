"""Running commands against the governed view: ``Workspace.run``.

The command sees a root filesystem built from the workspace as *this principal* sees it (files
it may read, under their virtual paths; read-only mounts read-only), inside bubblewrap with new
user, PID, IPC, UTS and network namespaces. What it creates, changes or deletes comes back
through the normal guarded write path, per path. See ``docs/sandbox.md``.

Modules: ``result`` (limits, result, error), ``bwrap`` (bubblewrap's command line),
``spawn`` (the running sandbox, its limits and the one kill of its whole tree), ``usage``
(what a running sandbox holds that no walk sees), ``seccomp`` (the system-call filter),
``view`` (materializing the view), ``snapshot`` (what was copied, what changed), ``tree``
(walking and removing a folder the command wrote, by descriptor), ``readback`` (diffing the
view, metering what was written), ``localbind`` (binding large read-only local folders),
``writeback`` (changes through the guard),
``approval`` (a reviewer asked about each change before the write-back), ``egress``, ``proxy``
and ``gate`` (network by allow-list: the list, the proxy, the proxy's socket inside the
command's network namespace), ``runner`` (the whole call), ``background`` and
``process_info`` (background processes, each its owner's).
"""

from bastion.sandbox.approval import Effect, Review
from bastion.sandbox.bwrap import bwrap_binary
from bastion.sandbox.egress import Egress
from bastion.sandbox.process_info import OutputChunk, ProcessInfo
from bastion.sandbox.result import RunLimits, RunResult, SandboxError
from bastion.sandbox.runner import run_in_sandbox

__all__ = [
    "Effect",
    "Egress",
    "OutputChunk",
    "ProcessInfo",
    "Review",
    "RunLimits",
    "RunResult",
    "SandboxError",
    "bwrap_binary",
    "run_in_sandbox",
]
