"""What a sandboxed command is given and what it gives back: limits, the result, the error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bastion.core.errors import SandboxError
from bastion.sandbox.egress import Egress

__all__ = ["RunLimits", "RunResult", "SandboxError"]


@dataclass(frozen=True, kw_only=True)
class RunLimits:
    """Resource limits of one command, and its one isolation switch (``network``); the wall
    timeout is ``run``'s own argument. The operator's, never the model's."""

    output_bytes: int = 1024 * 1024
    """Most bytes kept of stdout and of stderr each; past it the command is killed."""
    processes: int = 256
    """RLIMIT_NPROC of the sandbox's user: a fork bomb fails to fork past it."""
    memory_bytes: int = 2 * 1024**3
    """RLIMIT_AS of every process in the sandbox (memory no address space holds, memfds and
    System V IPC, is refused by the seccomp filter; ``docs/sandbox.md`` says what is not
    counted)."""
    file_bytes: int = 64 * 1024**2
    """RLIMIT_FSIZE: the largest file a process may write."""
    cpu_seconds: int | None = None
    """RLIMIT_CPU of every process (``None``: only the wall timeout applies)."""
    tmp_bytes: int = 256 * 1024**2
    """Size of the private ``/tmp`` and ``/dev/shm`` together (one tmpfs, held in the host's
    memory): past it, writes there fail with ``No space left on device``. More entries there
    than it has 4 KiB blocks kill the command (``limit="tmp"``): a tmpfs counts bytes, not
    files."""
    written_bytes: int = 256 * 1024**2
    """Most disk the command may take in the view, all entries together: each file it
    created or changed counts its size rounded up to 4 KiB, each new folder or link 4 KiB.
    Past it the command is killed (``limit="written"``) and none of its changes come back."""
    network: bool | Sequence[str] | Egress = False
    """``False``: a network namespace of the command's own with only a loopback that reaches
    nothing of the host. A list of domains (or an :class:`~bastion.sandbox.egress.Egress`):
    the same namespace, plus an HTTP/HTTPS proxy that Bastion runs for the command, which
    admits only those names and audits every request (``HTTP_PROXY`` and ``HTTPS_PROXY`` are
    set); stored as an ``Egress``. ``True``: share the host's network (its interfaces, loopback
    included, and its name-resolution files in ``/etc``), which lets the command reach
    whatever the host reaches and send out anything it may read: only for trusted commands
    (``docs/sandbox.md``)."""

    def __post_init__(self) -> None:
        for name in (
            "output_bytes",
            "processes",
            "memory_bytes",
            "file_bytes",
            "tmp_bytes",
            "written_bytes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"RunLimits.{name} must be at least 1")
        if self.cpu_seconds is not None and self.cpu_seconds < 1:
            raise ValueError("RunLimits.cpu_seconds must be at least 1 or None")
        if not isinstance(self.network, bool | Egress):
            object.__setattr__(self, "network", Egress(allow=self.network))

    @property
    def egress(self) -> Egress | None:
        """The allow-list when the network is one (see :attr:`network`)."""
        return self.network if isinstance(self.network, Egress) else None


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What a command did, and what of its changes came back through the guard."""

    exit_code: int | None
    """The command's exit status; ``None`` when it was killed (see ``signal``)."""
    signal: int | None
    """The signal that ended it, when one did (a limit hit is SIGKILL)."""
    duration: float
    """Wall seconds from start to exit."""
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit: str | None = None
    """The limit that ended the command or stopped its changes: ``"timeout"``, ``"output"``,
    ``"tmp"`` (too many entries in ``/tmp``) or ``"written"``; ``None`` otherwise."""
    changed: tuple[str, ...] = ()
    """Workspace paths written back (created or changed), as this principal."""
    deleted: tuple[str, ...] = ()
    """Workspace paths deleted, as this principal."""
    refused: dict[str, str] = field(default_factory=dict)
    """Changes the guard refused or that conflicted, path to one-line reason; not applied."""

    @property
    def ok(self) -> bool:
        """True when the command exited 0, hit no limit and every change came back."""
        return self.exit_code == 0 and self.limit is None and not self.refused
