"""The records of a view: what was copied into it (:class:`Snapshot`, :class:`Copied`) and what
the command changed (:class:`Change`). Built by ``bastion.sandbox.view``, read back by
``bastion.sandbox.readback``, applied by ``bastion.sandbox.writeback``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bastion.core.paths import VPath
from bastion.sandbox.bwrap import SYSTEM_NAMES
from bastion.sandbox.result import RunLimits

__all__ = ["Change", "Copied", "Snapshot", "stamp"]


def stamp(info: os.stat_result) -> tuple[int, int, int]:
    """Inode, size and change time: a file whose stamp is the same was not touched (a command
    can set a file's mtime, never its ctime)."""
    return (info.st_ino, info.st_size, info.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class Copied:
    """One file as it was copied into the view."""

    version: str | None
    digest: bytes
    stamp: tuple[int, int, int] = (0, 0, 0)
    """:func:`stamp` of the host file once copied (``(0, 0, 0)``: compare the content)."""


@dataclass
class Snapshot:
    """What the view held when the command started."""

    root: Path
    system: frozenset[str] = SYSTEM_NAMES
    """Top-level names the sandbox's system takes (never compared, never written back)."""
    files: dict[VPath, Copied] = field(default_factory=dict)
    dirs: set[VPath] = field(default_factory=set)
    read_only: list[str] = field(default_factory=list)
    """Mount prefixes bound read-only in the sandbox, parents first."""
    bound: dict[str, int] = field(default_factory=dict)
    """Read-only local mounts bound from their host folder (prefix to descriptor), not
    copied (``bastion.sandbox.localbind``); the caller closes the descriptors."""
    root_id: tuple[int, int] = (0, 0)
    """Device and inode of ``root`` once made: the folder read back must be this one."""
    read_cap: int = RunLimits().written_bytes
    """Most bytes one read-back takes from the view (the run's written-bytes limit): past it
    nothing comes back, as for a command over that limit."""

    def close(self) -> None:
        for fd in self.bound.values():
            os.close(fd)
        self.bound.clear()


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between the view after the command and the snapshot."""

    path: VPath
    kind: str
    """``"write"`` (created or changed file), ``"mkdir"``, ``"delete"`` or ``"refuse"``."""
    data: bytes = b""
    base: Copied | None = None
    """The file as copied (``None``: the command created it)."""
    reason: str = ""
    shown: str = ""
    """The path as reported when it is not a valid workspace path (``path`` is then ``/``)."""

    @property
    def key(self) -> str:
        """The path as ``RunResult`` reports it."""
        return self.shown or str(self.path)
