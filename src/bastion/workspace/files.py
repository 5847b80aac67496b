"""File operations on single entries: ``stat``, ``exists``, reading (bytes, text, line
ranges), writing (with backups and version conditions), ``edit``, ``mkdir`` and ``delete``.

Every method opens its operation before it parses its arguments, so a malformed request is
rate-limited and audited like any other. One read returns at most the policy's
``max_file_bytes``: a larger file is read a range at a time, never cut silently.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from bastion.core.errors import (
    AlreadyExistsError,
    ConflictError,
    EditError,
    IsADirectoryError_,
    LimitError,
    NotFoundError,
    UncheckedWriteError,
)
from bastion.core.guard import GuardContext, GuardedStore
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.patience import Patience
from bastion.core.ports import ReadCheck
from bastion.labels.frontmatter import LABEL_BYTES
from bastion.workspace.indexing import IndexFollower
from bastion.workspace.routing import Router, parse_in
from bastion.workspace.tail import ascii_compatible, read_tail
from bastion.workspace.writing import carry_labels, make_dirs, refuse_file_at, write_file

__all__ = ["EditResult", "FileOps", "TextPage", "rows_of"]

_LINE_CHUNK = 64 * 1024


class _Changed(Exception):
    """The file changed between two chunks of one page (the page is read again)."""


@dataclass(frozen=True, slots=True)
class EditResult:
    """What an edit changed."""

    path: str
    replacements: int
    version: str | None


@dataclass(frozen=True, slots=True)
class TextPage:
    """Lines of a file, and the file they were read from (:meth:`Workspace.read_lines`)."""

    info: FileInfo
    """The file as its first page was read: version, size, labels."""
    text: str
    """The lines, each ending with ``\\n`` (the file's last line may not)."""
    more: bool
    """Lines follow the page."""
    split: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    """:attr:`rows`, when the read already split the text (else made on demand)."""
    from_end: int | None = None
    """For a read from the end (a negative offset): the page's first line counted from the
    end of the file (``-1``: the last line); else ``None``."""

    @property
    def rows(self) -> tuple[str, ...]:
        """The lines without their ``\\n`` (none for an empty page)."""
        return self.split if self.split is not None else rows_of(self.text)


def rows_of(text: str) -> tuple[str, ...]:
    """The lines of ``text`` without their ``\\n``: a last ``\\n`` ends the last line, and
    an empty text has none."""
    rows = text.split("\n")
    if not rows[-1]:  # the end of the last line, or an empty text
        rows.pop()
    return tuple(rows)


class FileOps:
    """Operations on one file or directory, for the principal of the router."""

    def __init__(self, router: Router, index: IndexFollower) -> None:
        self._router = router
        self._ctx: GuardContext = router.ctx
        self._index = index

    # -- stat ----------------------------------------------------------------------------------

    async def stat(self, path: str | VPath) -> FileInfo:
        """Size, kind, modification time and version of one entry.
        (see :meth:`Workspace.stat`)"""
        with self._ctx.operation("stat", path) as op:
            return await self._router.stat(parse_in(op, path))

    async def exists(self, path: str | VPath) -> bool:
        """True when the entry exists and the principal may see it.
        (see :meth:`Workspace.exists`)"""
        with self._ctx.operation("exists", path) as op:
            vp = parse_in(op, path)
            try:
                await self._router.stat(vp)
            except NotFoundError:
                return False
            return True

    # -- read --------------------------------------------------------------------------------

    async def read_bytes(
        self, path: str | VPath, *, start: int | None = None, end: int | None = None
    ) -> bytes:
        """The file's bytes, or the byte range ``[start, end)``.
        (see :meth:`Workspace.read_bytes`)"""
        with self._ctx.operation("read", path) as op:
            vp = parse_in(op, path)
            if (start is not None and start < 0) or (end is not None and end < 0):
                raise ValueError("start and end must be non-negative")
            guarded, rel = self._router.route(vp)
            first = start or 0
            length = None if end is None else max(end - first, 0)
            cap = self._ctx.policy.limits.max_file_bytes

            def within_limit(info: FileInfo) -> None:
                stop = info.size if length is None else min(info.size, first + length)
                if stop - first > cap:
                    whole = start is None and end is None
                    raise _over_limit(vp, info.size, stop - first, cap, whole=whole)

            _, data = await self._read(guarded, rel, vp, first, length, within_limit)
            return data

    async def read_text(
        self,
        path: str | VPath,
        *,
        offset: int = 0,
        limit: int | None = None,
        encoding: str = "utf-8",
    ) -> str:
        """The file as text, or ``limit`` lines starting after ``offset`` lines.
        (see :meth:`Workspace.read_text`)"""
        with self._ctx.operation("read", path) as op:
            vp = parse_in(op, path)
            if limit is not None and limit < 0:
                raise ValueError("limit must be non-negative")
            guarded, rel = self._router.route(vp)
            if offset < 0:
                return (await self._tail(guarded, rel, vp, -offset, limit, encoding)).text
            if offset == 0 and limit is None:
                _, data = await self._read_whole(guarded, rel, vp)
                return data.decode(encoding, "replace")
            page = await self._page(guarded, rel, vp, offset, limit, encoding, split=False)
            return page.text

    async def read_lines(
        self,
        path: str | VPath,
        *,
        offset: int = 0,
        limit: int | None = None,
        encoding: str = "utf-8",
    ) -> TextPage:
        """``limit`` lines after ``offset`` lines, the file they came from, and whether more
        follow. (see :meth:`Workspace.read_lines`)"""
        with self._ctx.operation("read", path) as op:
            vp = parse_in(op, path)
            if limit is not None and limit < 0:
                raise ValueError("limit must be non-negative")
            guarded, rel = self._router.route(vp)
            if offset < 0:
                return await self._tail(guarded, rel, vp, -offset, limit, encoding)
            return await self._page(guarded, rel, vp, offset, limit, encoding, split=True)

    async def _tail(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        count: int,
        limit: int | None,
        encoding: str,
    ) -> TextPage:
        """The page that starts ``count`` lines before the end, read backwards from the end
        (:mod:`bastion.workspace.tail`), all from one version of the file."""
        if not ascii_compatible(encoding):
            raise ValueError(
                f"a read from the end needs an ASCII-compatible encoding, not {encoding}"
            )
        cap = self._ctx.policy.limits.max_file_bytes
        patience: Patience | None = None
        while True:
            try:
                info, text, more, start, rows = await read_tail(
                    guarded, rel, vp, count, limit, encoding, cap, _read_more
                )
                return TextPage(info.at(vp), text, more, rows, from_end=start)
            except _Changed:
                patience = patience or Patience()
                if not await patience.wait():
                    break
            except IsADirectoryError_:
                raise IsADirectoryError_(
                    f"{vp} is a directory; use list to see its entries",
                    path=vp,
                ) from None
        raise ConflictError(f"{vp} kept changing while it was being read; read it again")

    async def _read(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        offset: int,
        length: int | None,
        check: ReadCheck | None,
    ) -> tuple[FileInfo, bytes]:
        try:
            return await guarded.read_file(rel, offset, length, check=check)
        except IsADirectoryError_:
            raise IsADirectoryError_(f"{vp} is a directory; use list to see its entries") from None

    async def _read_whole(
        self, guarded: GuardedStore, rel: VPath, vp: VPath
    ) -> tuple[FileInfo, bytes]:
        """The whole file, refused when it is over the size limit."""
        cap = self._ctx.policy.limits.max_file_bytes

        def within_limit(info: FileInfo) -> None:
            if info.size > cap:
                raise _over_limit(vp, info.size, info.size, cap, whole=True)

        return await self._read(guarded, rel, vp, 0, None, within_limit)

    async def _page(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        offset: int,
        limit: int | None,
        encoding: str,
        *,
        split: bool,
    ) -> TextPage:
        """Lines ``offset`` to ``offset + limit``, all from one version of the file: a page
        read in chunks that another writer changed between two of them is read again from
        the start (other writers waited out for a bounded time, then a
        :class:`ConflictError`), never served as a mix of two versions under the info of one
        (a read tool records that info as what was read)."""
        patience: Patience | None = None  # made once another writer came in between
        while True:
            try:
                return await self._page_once(guarded, rel, vp, offset, limit, encoding, split=split)
            except _Changed:
                patience = patience or Patience()
                if not await patience.wait():
                    break
        raise ConflictError(f"{vp} kept changing while it was being read; read it again")

    async def _page_once(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        offset: int,
        limit: int | None,
        encoding: str,
        *,
        split: bool,
    ) -> TextPage:
        """Lines ``offset`` to ``offset + limit`` streamed in pages: the first page comes with
        the file's info from one read (the guard checks the labels on that info), the next
        ones are read only while lines are still wanted, each on condition that the file is
        still the version of the first (else :class:`_Changed`). Lines are found with
        ``str.count`` and ``str.find``, not one by one. A small file read from its start with
        ``split`` is split into its rows once, which both tells whether it fits in ``limit``
        lines and gives :attr:`TextPage.rows` (one pass over the text, not two)."""
        cap = self._ctx.policy.limits.max_file_bytes
        info, page = await self._read(guarded, rel, vp, 0, _LINE_CHUNK, None)
        position = len(page)
        eof = len(page) < _LINE_CHUNK
        if eof and _within(page, encoding, cap):  # the whole file, surely within the limit
            text = page.decode(encoding, "replace")
            return _page_of(info.at(vp), text, offset, limit, split=split)
        decoder = None if eof else codecs.getincrementaldecoder(encoding)("replace")
        pending = page.decode(encoding, "replace") if decoder is None else decoder.decode(page)
        if (  # a small file read from its start: maybe the whole page
            eof
            and offset == 0
            and (whole := _whole_page(info, vp, page, pending, limit, encoding, cap, split=split))
        ):
            return whole
        skipped = taken = size = 0
        kept: list[str] = []
        # the page's rows, kept as the lines are found (only for a page of ``limit`` lines)
        rows: list[str] | None = [] if split and limit is not None else None
        while True:
            if skipped < offset:
                pending, count = _skip_lines(pending, offset - skipped)
                skipped += count
            if skipped == offset:
                end, count = _lines_end(pending, None if limit is None else limit - taken, rows)
                if end >= 0:
                    chunk, pending = pending[: end + 1], pending[end + 1 :]
                    taken += count
                    size += len(chunk.encode("utf-8", "replace"))
                    kept.append(chunk)
                if size > cap:
                    raise _too_many_lines(vp, cap)
                if limit is not None and taken >= limit:
                    more = bool(pending) or (decoder is not None and bool(decoder.getstate()[0]))
                    if not more and not eof:
                        more = bool(await _read_more(guarded, rel, info, position, 1))
                    split_rows = None if rows is None else tuple(rows)
                    return TextPage(info.at(vp), "".join(kept), more, split_rows)
            if len(pending) > cap:
                raise LimitError(f"{vp}: a single line is longer than {cap} bytes; read bytes")
            if eof:
                break
            page = await _read_more(guarded, rel, info, position, _LINE_CHUNK)
            position += len(page)
            eof = len(page) < _LINE_CHUNK
            assert decoder is not None  # made for a file of more than one page
            pending += decoder.decode(page, final=eof)
        if pending and skipped >= offset:
            if size + len(pending.encode("utf-8", "replace")) > cap:
                raise _too_many_lines(vp, cap)
            kept.append(pending)
            if rows is not None:
                rows.append(pending)
        split_rows = None if rows is None else tuple(rows)
        return TextPage(info.at(vp), "".join(kept), False, split_rows)

    # -- write -------------------------------------------------------------------------------

    async def write(
        self,
        path: str | VPath,
        content: str | bytes,
        *,
        mode: WriteMode | str = WriteMode.OVERWRITE,
        parents: bool = True,
        backup: bool = False,
        if_version: str | None = None,
    ) -> FileInfo:
        """Create, overwrite or append to a file. (see :meth:`Workspace.write`)"""
        with self._ctx.operation("write", path) as op:
            vp = parse_in(op, path)
            data = _encoded(content)
            write_mode = WriteMode(mode)
            if self._router.is_mount_point(vp):
                raise IsADirectoryError_(f"{vp} is a directory (a mount point)")
            guarded, rel = await self._router.route_change(vp, len(data), write_mode, is_file=True)
            if backup and write_mode is not WriteMode.CREATE:
                await guarded.check_write(rel, len(data), write_mode)
                info = await self._backed_up_write(
                    guarded, rel, vp, data, write_mode, if_version, parents
                )
            else:
                info = await write_file(guarded, rel, data, write_mode, if_version, parents)
            op.bytes = len(data)
            await self._index.changed(vp)
            return info.at(vp)

    async def append(
        self, path: str | VPath, content: str | bytes, *, parents: bool = True
    ) -> FileInfo:
        """Add ``content`` to the end of a file (creating it if needed).
        (see :meth:`Workspace.append`)"""
        return await self.write(path, content, mode=WriteMode.APPEND, parents=parents)

    async def _backed_up_write(
        self,
        guarded: GuardedStore,
        rel: VPath,
        vp: VPath,
        data: bytes,
        mode: WriteMode,
        if_version: str | None,
        parents: bool,
    ) -> FileInfo:
        """Back the file up, then write it on condition that it is still the version backed
        up; when another writer (in any process) came in between, both again. So the backup
        always holds what the write replaced."""
        patience = Patience()
        while True:
            backed_up = await self._backup(guarded, rel, vp, if_version)
            condition = if_version if backed_up is None else backed_up
            try:
                return await write_file(guarded, rel, data, mode, condition, parents)
            except ConflictError:
                if if_version is not None or backed_up is None:
                    raise
            except UncheckedWriteError:
                if if_version is not None or backed_up is None:
                    raise
                # A store that cannot check versions across processes refuses the condition
                # (docs/stores.md) and has changed nothing: its weaker promise, as before.
                # Only that refusal: a fault (a full disk, a server error) is raised as it is,
                # never retried without the condition over what another writer put there.
                return await write_file(guarded, rel, data, mode, None, parents)
            if not await patience.wait():
                raise ConflictError(f"{vp} kept changing while it was being backed up; retry")

    async def _backup(
        self, guarded: GuardedStore, rel: VPath, vp: VPath, if_version: str | None
    ) -> str | None:
        """Copy the file to ``NAME.bak``; the version copied (``None``: nothing to copy, or a
        store without versions)."""
        if await guarded.lookup(rel) is None:
            return None
        info, old = await guarded.read_file(rel)
        if if_version is not None and info.version != if_version:
            raise ConflictError(f"{vp} changed since version {if_version}; read it again")
        bak = rel.parent.child(rel.name + ".bak")
        await carry_labels(guarded, bak, info.labels, old[:LABEL_BYTES])
        await guarded.write(bak, old, mode=WriteMode.OVERWRITE)
        return info.version

    async def edit(
        self,
        path: str | VPath,
        old: str,
        new: str,
        *,
        replace_all: bool = False,
        if_version: str | None = None,
    ) -> EditResult:
        """Replace the exact text ``old`` with ``new``. (see :meth:`Workspace.edit`)"""
        with self._ctx.operation("edit", path) as op:
            vp = parse_in(op, path)
            if not old:
                raise EditError("the text to replace is empty; give the exact text to change")
            guarded, rel = self._router.route(vp)
            info, raw = await self._read_whole(guarded, rel, vp)
            if if_version is not None and info.version != if_version:
                raise ConflictError(f"{vp} changed since version {if_version}; read it again")
            text = raw.decode("utf-8", "replace")
            count = text.count(old)
            shown = old if len(old) <= 60 else old[:57] + "..."
            if count == 0:
                raise EditError(
                    f"{shown!r} not found in {vp}; read the file and copy the exact text"
                )
            if count > 1 and not replace_all:
                raise EditError(
                    f"{shown!r} occurs {count} times in {vp}; add surrounding text to make it "
                    "unique, or pass replace_all=True"
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            data = updated.encode("utf-8")
            written = await guarded.write(
                rel, data, mode=WriteMode.OVERWRITE, if_version=info.version
            )
            op.bytes = len(data)
            await self._index.changed(vp)
            return EditResult(str(vp), count if replace_all else 1, written.version)

    # -- directories and delete --------------------------------------------------------------

    async def mkdir(
        self, path: str | VPath, *, parents: bool = True, exist_ok: bool = True
    ) -> None:
        """Create a directory (and its parents unless ``parents=False``).
        (see :meth:`Workspace.mkdir`)"""
        with self._ctx.operation("mkdir", path) as op:
            vp = parse_in(op, path)
            if self._router.is_mount_point(vp):
                if exist_ok:
                    return
                raise AlreadyExistsError(f"{vp} already exists (a mount point)")
            guarded, rel = await self._router.route_change(vp, is_file=False, parents=parents)
            if parents:
                existed = await make_dirs(guarded, rel, exist_ok=exist_ok)
            else:
                try:
                    await guarded.mkdir(rel)
                except AlreadyExistsError:
                    if not exist_ok:
                        raise
                    existed = True
                else:
                    existed = False
            if existed:
                await refuse_file_at(guarded, rel, vp)

    async def delete(self, path: str | VPath, *, recursive: bool = False) -> None:
        """Delete a file or an empty directory. (see :meth:`Workspace.delete`)"""
        with self._ctx.operation("delete", path) as op:
            vp = parse_in(op, path)
            self._router.refuse_mount_points(vp, "delete")
            guarded, rel = self._router.route(vp)
            found = await guarded.lookup(rel)
            await guarded.delete(rel, recursive=recursive)
            if found is not None and found.is_file:
                await guarded.drop_sidecar(rel)
            await self._index.removed(vp)


async def _read_more(
    guarded: GuardedStore, rel: VPath, first: FileInfo, offset: int, length: int
) -> bytes:
    """A further chunk of a page whose first chunk came with ``first``, on condition that the
    file is still that version (else :class:`_Changed`, before any byte is read)."""

    def unchanged(now: FileInfo) -> None:
        if now.version != first.version or now.size != first.size:
            raise _Changed

    _, data = await guarded.read_file(rel, offset, length, check=unchanged)
    return data


def _encoded(content: str | bytes) -> bytes:
    if not isinstance(content, str):
        return bytes(content)
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditError(
            f"the text holds a character UTF-8 cannot store (a lone surrogate at {exc.start}); "
            "remove it and write again"
        ) from None


def _whole_page(
    info: FileInfo,
    vp: VPath,
    data: bytes,
    text: str,
    limit: int | None,
    encoding: str,
    cap: int,
    *,
    split: bool,
) -> TextPage | None:
    """The whole file ``text`` (decoded from ``data``) as one page at ``vp``, when it has at
    most ``limit`` lines and is within the read limit; ``None`` otherwise (then it is paged).
    With ``split``, the lines are counted by splitting them, and the page keeps its rows."""
    if not (_within(data, encoding, cap) or len(text.encode("utf-8", "replace")) <= cap):
        return None
    if split:
        rows = rows_of(text)
        if limit is None or len(rows) <= limit:
            return TextPage(info.at(vp), text, False, rows)
    elif limit is None or text.count("\n", 0, -1) < limit:
        return TextPage(info.at(vp), text, False)
    return None


def _within(data: bytes, encoding: str, cap: int) -> bool:
    """True when ``data`` decoded from UTF-8 (errors replaced) is sure to be at most ``cap``
    bytes in UTF-8 again, without encoding it: a valid sequence of ``n`` bytes is one
    character of ``n`` bytes, an invalid one (one byte or more) one replacement character of
    three. Other encodings: ``False`` (then the text is measured)."""
    return encoding == "utf-8" and 3 * len(data) <= cap


def _skip_lines(text: str, most: int) -> tuple[str, int]:
    """``text`` after its first ``most`` complete lines (after all of them when it has fewer),
    and how many were skipped."""
    count = text.count("\n")
    if count <= most:
        return (text[text.rfind("\n") + 1 :] if count else text), count
    return text.split("\n", most)[-1], most


def _lines_end(text: str, want: int | None, rows: list[str] | None) -> tuple[int, int]:
    """Where the complete lines of ``text`` that are wanted end (the index of the last one's
    ``\n``, -1 for none) and how many they are: every complete line when ``want`` is
    ``None``, else at most ``want``, found in one ``str.split`` whose parts, those lines,
    are added to ``rows`` (when given)."""
    if want is None:
        count = text.count("\n")
        return (text.rfind("\n") if count else -1), count
    lines = text.split("\n", want)
    if rows is not None:
        rows += lines[:-1]
    return len(text) - len(lines[-1]) - 1, len(lines) - 1


def _page_of(info: FileInfo, text: str, offset: int, limit: int | None, *, split: bool) -> TextPage:
    """Lines ``offset`` to ``offset + limit`` of a whole file's ``text`` (the lines the paged
    read gives), from one ``str.split`` that stops after the last line wanted: its parts are
    the page's rows, and what it leaves tells whether more follow."""
    if limit is None and offset == 0 and not split:
        return TextPage(info, text, False)
    parts = text.split("\n", -1 if limit is None else offset + limit)
    if limit is not None and len(parts) > offset + limit:  # every line of the page ends
        rest = parts.pop()
        rows = parts[offset:]
        end = len(text) - len(rest)
        start = end - sum(map(len, rows)) - len(rows)
        return TextPage(info, text[start:end], bool(rest), tuple(rows) if split else None)
    ended = not parts[-1]  # the text ends with a newline (or is empty)
    if ended:
        parts.pop()
    if offset == 0:  # the whole text
        return TextPage(info, text, False, tuple(parts) if split else None)
    rows = parts[offset:]
    if not rows:
        return TextPage(info, "", False, () if split else None)
    size = sum(map(len, rows)) + len(rows) - (not ended)
    return TextPage(info, text[len(text) - size :], False, tuple(rows) if split else None)


def _too_many_lines(vp: VPath, cap: int) -> LimitError:
    return LimitError(
        f"{vp}: the lines asked for are over the {cap}-byte read limit; "
        "ask for fewer lines (limit=...)"
    )


def _over_limit(vp: VPath, size: int, asked: int, cap: int, *, whole: bool) -> LimitError:
    if whole:
        return LimitError(
            f"{vp} is {size} bytes, over the {cap}-byte read limit; "
            "read a range (offset/limit lines or start/end bytes)"
        )
    return LimitError(
        f"{vp}: the range asked for is {asked} bytes, over the {cap}-byte read limit; "
        f"read at most {cap} bytes at a time"
    )
