"""A seccomp filter for sandboxed commands, built here as a classic BPF program (no library).

bubblewrap installs it (``--seccomp FD``) just before it runs the command, so the command and
every process it starts get ``EPERM`` from the system calls a command over files has no use
for and that widen the kernel surface an escape would go through:

* debugging and reading other processes' memory: ``ptrace``, ``process_vm_readv/writev``;
* mounting: ``mount``, ``umount2``, ``pivot_root`` and the new mount API (``fsopen``,
  ``fsmount``, ``open_tree``, ``move_mount``, ...);
* new user namespaces (where an unprivileged process gets capabilities again): ``unshare``
  and ``clone`` with ``CLONE_NEWUSER``, and ``setns``; ``clone3`` answers ``ENOSYS`` (its
  flags are behind a pointer a filter cannot read), so the C library falls back to ``clone``;
* the kernel keyring (``keyctl``, ``add_key``, ``request_key``), ``bpf``,
  ``perf_event_open``, ``userfaultfd``;
* modules, ``kexec``, ``reboot``, swap, ``acct``, ``quotactl``, file handles
  (``open_by_handle_at``, ``name_to_handle_at``);
* ``io_uring`` (its three calls: a large kernel surface with a record of escapes; programs
  that use it fall back to ordinary calls when it is refused).

Memory that no per-process limit counts answers ``ENOSYS`` (as on a kernel built without it,
so programs take their fallback): ``memfd_create`` and ``memfd_secret`` (an anonymous file
grows outside RLIMIT_AS and outside the sized ``/tmp``), and System V IPC's ``shmget``,
``msgget`` and ``semget`` (a segment outlives its detach, queues and semaphore sets live in
the kernel). POSIX shared memory and named semaphores are files in ``/dev/shm``, counted
with ``/tmp``.

A call made with another architecture's numbering (``int 0x80`` on x86-64) kills the process;
on x86-64, x32 numbers answer ``EPERM``. Only x86-64 and AArch64 have a table: elsewhere
:func:`filter_program` is ``None`` and the command runs without a filter (the namespaces and
the view are the boundary; the filter narrows the kernel surface behind them).
"""

from __future__ import annotations

import errno
import os
import platform
import struct

__all__ = ["ABSENT", "DENIED", "filter_fd", "filter_program"]

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
"""System calls that always answer ``EPERM``."""

ABSENT = ("memfd_create", "memfd_secret", "shmget", "msgget", "semget", "clone3")
"""System calls that always answer ``ENOSYS``: memory outside every limit, and ``clone3``."""

_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165,
    "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "setns": 308,
    "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "kexec_load": 246, "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168,
    "acct": 163, "quotactl": 179, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "lookup_dcookie": 212, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "unshare": 272, "clone": 56, "clone3": 435,
    "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "semget": 64,
}  # fmt: skip
_AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "mount": 40,
    "umount2": 39, "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "setns": 268,
    "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "kexec_load": 104, "kexec_file_load": 294, "reboot": 142, "swapon": 224, "swapoff": 225,
    "acct": 89, "quotactl": 60, "open_by_handle_at": 265, "name_to_handle_at": 264,
    "lookup_dcookie": 18, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "unshare": 97, "clone": 220, "clone3": 435,
    "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "semget": 190,
}  # fmt: skip
_ARCHES = {
    "x86_64": (0xC000003E, _X86_64),  # AUDIT_ARCH_X86_64
    "aarch64": (0xC00000B7, _AARCH64),  # AUDIT_ARCH_AARCH64
}
_X32_BIT = 0x40000000
_CLONE_NEWUSER = 0x10000000

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EPERM = _ERRNO | errno.EPERM
_ENOSYS = _ERRNO | errno.ENOSYS
# Offsets in struct seccomp_data: nr, arch, instruction pointer, then six 64-bit arguments
# (little-endian on both architectures: the low 32 bits of the first are at 16).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (``platform.machine()`` by default) as bubblewrap reads it:
    ``struct sock_filter`` records back to back; ``None`` for an architecture with no table."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, numbers = arch
    prog = [
        _op(_LD_W_ABS, _ARCH),
        _op(_JEQ_K, audit_arch, jt=1),
        _op(_RET_K, _KILL_PROCESS),
        _op(_LD_W_ABS, _NR),
    ]
    if audit_arch == _ARCHES["x86_64"][0]:
        prog += [_op(_JGE_K, _X32_BIT, jf=1), _op(_RET_K, _EPERM)]
    for name in DENIED:
        prog += [_op(_JEQ_K, numbers[name], jf=1), _op(_RET_K, _EPERM)]
    for name in ABSENT:
        prog += [_op(_JEQ_K, numbers[name], jf=1), _op(_RET_K, _ENOSYS)]
    # clone and unshare: refused only with CLONE_NEWUSER in their first argument.
    prog += [
        _op(_JEQ_K, numbers["clone"], jt=1),
        _op(_JEQ_K, numbers["unshare"], jf=3),
        _op(_LD_W_ABS, _ARG0_LOW),
        _op(_JSET_K, _CLONE_NEWUSER, jf=1),
        _op(_RET_K, _EPERM),
        _op(_RET_K, _ALLOW),
    ]
    return b"".join(prog)


def filter_fd() -> int | None:
    """A new descriptor (an in-memory file, read from its start) holding the filter, for
    bubblewrap's ``--seccomp``; ``None`` where there is no table. The caller closes it."""
    program = filter_program()
    if program is None:
        return None
    fd = os.memfd_create("bastion-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
