"""When labels worked out from a file's bytes may be kept for its version: not while the
version is *racy*, as git calls an index entry whose file changed too close to the moment it
was looked at.

A local file's version is read off the file's clock (``mtime-size-inode-ctime``). Two
changes within one tick of that clock (a jiffy, up to 10 ms where the kernel keeps coarse
times; a second or two on filesystems with coarse stamps) leave the same version, and the
kernel stamps a ``write`` before it copies the bytes. So bytes read within a tick of the
version's stamp may not be the only bytes that version names: another writer, rewriting the
file in place, can still bring others under the same version. Labels worked out from such
bytes decide only the read that read them; they are kept for later reads only once the
stamp was safely in the past when the bytes were read (:func:`settled`).

Versions that are counters (memory, SQLite, PostgreSQL, the object stores' etags) carry no
stamp (``FileInfo.changed_ns`` is ``None``) and are always settled.
"""

from __future__ import annotations

import time

from bastion.core.models import FileInfo

__all__ = ["RACY_NS", "settled"]

_CLOCK_REALTIME_COARSE = 5  # Linux: the clock the kernel stamps files with when coarse


def _tick_ns() -> int:
    """The kernel's coarse clock tick (its file stamps' granularity), 10 ms where unknown."""
    try:
        return max(int(time.clock_getres(_CLOCK_REALTIME_COARSE) * 1e9), 1_000_000)
    except (OSError, ValueError):
        return 10_000_000


_MARGIN_NS = 20_000_000
"""Beyond the tick: the time a ``write`` may take between stamping the file and copying its
bytes (a writer descheduled in between on a busy machine)."""
RACY_NS = _tick_ns() + _MARGIN_NS
"""A version stamped less than this before its bytes were read is racy."""
_WHOLE_SECONDS_NS = 2_000_000_000 + _MARGIN_NS
"""The racy span of a stamp in whole seconds (a filesystem keeping seconds, FAT two)."""


def settled(read_ns: int, *infos: FileInfo | None) -> bool:
    """Whether bytes of the versions ``infos`` read from ``read_ns`` on (``time.time_ns()``
    taken before reading) can be the only bytes those versions name: each stamp safely
    before ``read_ns``. A stamp after it (a clock set back) is racy."""
    for info in infos:
        stamp = None if info is None else info.changed_ns
        if stamp is None:
            continue
        span = _WHOLE_SECONDS_NS if stamp % 1_000_000_000 == 0 else RACY_NS
        if stamp > read_ns - span:
            return False
    return True
