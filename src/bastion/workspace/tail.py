"""Reads from the end: the last lines of a file, found by reading backwards from its end in
chunks (ranged reads of the store), never by reading the lines before them.

A negative line offset (``offset=-100``) names the line that many lines before the end:
the page starts there and holds up to ``limit`` lines (all the rest when ``limit`` is not
given). Every chunk is read through the guard on condition that the file is still the version
of the first one, so a page is never a mix of two versions; the first read is a read of no
bytes that checks the file's labels and tells its size.
"""

from __future__ import annotations

import codecs
from collections.abc import Awaitable, Callable

from bastion.core.errors import LimitError
from bastion.core.guard import GuardedStore
from bastion.core.models import FileInfo
from bastion.core.paths import VPath

__all__ = ["TAIL_CHUNK", "ascii_compatible", "read_tail"]

TAIL_CHUNK = 64 * 1024
"""Bytes read per step backwards from the end."""

ReadMore = Callable[[GuardedStore, VPath, FileInfo, int, int], Awaitable[bytes]]


def ascii_compatible(encoding: str) -> bool:
    """Whether a ``\\n`` byte is a line break wherever it stands in text of ``encoding``
    (UTF-8, ASCII, the Latin ones): what finding lines backwards from the end needs."""
    name = codecs.lookup(encoding).name
    return name in {"utf-8", "ascii", "latin-1", "iso8859-1", "cp1252", "iso8859-15"}


async def read_tail(
    guarded: GuardedStore,
    rel: VPath,
    vp: VPath,
    count: int,
    limit: int | None,
    encoding: str,
    cap: int,
    read_more: ReadMore,
) -> tuple[FileInfo, str, bool, int, tuple[str, ...]]:
    """The file's info, the text of up to ``limit`` lines starting ``count`` lines before the
    end (``count`` >= 1), whether lines follow them, where the first of them is, counted
    from the end (``-count``, or fewer when the file has fewer lines), and the lines without
    their ``\n`` (:attr:`TextPage.rows`). ``read_more`` reads a further chunk on condition
    that the file is still the version first read."""
    info, _ = await guarded.read_file(rel, 0, 0)
    size = info.size
    position = size
    chunks: list[bytes] = []  # read backwards from the end, the last read first
    held = 0
    need = count  # the line breaks still to find before the page's first line
    while position > 0:
        if held > cap:
            raise _too_long(vp, cap)
        start = max(position - TAIL_CHUNK, 0)
        chunk = await read_more(guarded, rel, info, start, position - start)
        if position == size and chunk.endswith(b"\n"):
            need += 1  # a last "\n" ends the last line: it starts no line of its own
        position = start
        # the breaks still needed, from the chunk's end: one split from the right that stops
        # there (each chunk looked at once, never the bytes after the page's start)
        pieces = chunk.rsplit(b"\n", need)
        if len(pieces) > need:  # the page starts just after the first piece
            chunk = chunk[len(pieces[0]) + 1 :]
            need = 0
        else:
            need -= len(pieces) - 1
        chunks.append(chunk)
        held += len(chunk)
        if not need:
            break
    buf = b"".join(reversed(chunks))  # from the page's start (or the file's) to the end
    text = buf.decode(encoding, "replace")
    rows = text.split("\n")
    if rows[-1] == "":
        rows.pop()
    start_line = -len(rows)
    more = limit is not None and len(rows) > limit
    if more:
        rows = rows[:limit]
        text = "\n".join(rows) + "\n" if rows else ""
    if len(text.encode("utf-8", "replace")) > cap:
        raise _too_long(vp, cap)
    return info, text, more, start_line, tuple(rows)


def _too_long(vp: VPath, cap: int) -> LimitError:
    return LimitError(
        f"{vp}: the last lines asked for are over the {cap}-byte read limit; ask for fewer lines "
        "(a smaller negative offset, or limit=...)"
    )
