"""Document labels on every path: each mount's store wrapped so ``FileInfo.labels`` holds the
document's effective labels, as :func:`bastion.labels.resolve.resolve_labels` works them out;
and the answers the guard asks for through the label port (:mod:`bastion.core.label_port`).

The guard decides every read, listing, grep and search on ``FileInfo.labels``, and the index
takes the same value, so one function decides for every path. This wrapper only gathers the
inputs: the store's (or mount's) labels, the head of the file (front matter may open any file,
whatever its name), and its sidecar ``<name>.labels.yaml``.

A sidecar shows only to those who may see its file: it carries its file's labels. A sidecar that
is a folder, a link, a special file, or a name in another Unicode normalization form cannot be
read, and the file's labels are undetermined (it is hidden from everybody, and the refusal's
audit record says why). Labels are worked out once per file version and sidecar version, and
cached; a failure to reach the sidecar is not cached. The cache trusts a store's version to
change with every change of the bytes, which a version read off a clock does only once the
clock has moved on: labels worked out from bytes read within a tick of their version's stamp
are not kept (:mod:`bastion.labels.settled`), and a read of such a *racy* file takes its
labels from the head it reads with the bytes it returns (:meth:`DocumentLabels._read_fresh`).
"""

from __future__ import annotations

import builtins
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from bastion.core.errors import (
    BastionError,
    ConflictError,
    NotFoundError,
    UnsupportedFileError,
)
from bastion.core.label_port import LabelPort, Relabel
from bastion.core.listings import Sought
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.patience import PATIENCE, Patience
from bastion.core.ports import ReadCheck, Store
from bastion.core.principal import Classifications
from bastion.core.sidecars import in_other_case, labelled_file_of
from bastion.labels.frontmatter import (
    LABEL_BYTES,
    MAX_FRONT_MATTER_BYTES,
    encoding_of,
)
from bastion.labels.resolve import resolve_labels
from bastion.labels.settled import settled
from bastion.labels.sidecars import (
    NO_SIDECAR,
    ODD,
    Sidecar,
    find_sidecar,
    joined,
    listed_sidecar,
    odd_names_of,
    refuse_unreadable,
    refuse_unreadable_append,
    sidecar_text,
    tightens,
)

__all__ = ["DocumentLabels", "listings_reused"]

_CACHE = 16_384
_PROBE = 16
"""Bytes read first: enough to tell whether front matter may open the file (``---`` in UTF-32
after a byte-order mark); only then is the whole head read."""
_JOINED = 1 << 20
"""A racy read of a range starting this far into the file at most reads from the start, the
head with the range in one read; one further in reads the head apart (same version)."""
_PATIENCE = PATIENCE
"""Seconds a read goes on trying while the file keeps changing between its labels and its
bytes (:class:`~bastion.core.patience.Patience`)."""


_Listing = tuple[dict[str, FileInfo], frozenset[str], frozenset[str]]
"""A folder's listing as :meth:`DocumentLabels.list` saw it: entries by name, the store's odd
names there, and the case-folded names of files whose sidecar is listed in another case."""
_LISTINGS: ContextVar[dict[tuple[object, tuple[str, ...]], _Listing] | None] = ContextVar(
    "bastion_listings", default=None
)


@contextmanager
def listings_reused() -> Iterator[None]:
    """Within: a read of an ordinary file takes its sidecar from the listing of its folder
    that a :meth:`DocumentLabels.list` made earlier within (one call of ``grep``), instead of
    looking it up per file. Labels are still taken from the cache by the version of the file
    opened (a file changed since its listing is worked out afresh), so a file's answer is
    the one it had when its folder was listed."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


class _Unknown(Exception):
    """A file's labels are not in the cache for the version being read."""


class _SidecarGone(Exception):
    """The sidecar seen a moment ago is gone when read (another process deleted it)."""


class DocumentLabels(Store, LabelPort):
    """``inner`` with ``FileInfo.labels`` set to each document's effective labels; the label
    port of its mount's guard."""

    keeps_labels = True
    timeout = None  # the inner store carries the mount's timeout

    def __init__(self, inner: Store, base: Labels, classifications: Classifications) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.gated_commits = inner.gated_commits
        self.ephemeral = inner.ephemeral
        self._base = base
        self._order = classifications
        self._stores_labels = inner.keeps_labels
        self._cache: OrderedDict[tuple[Any, ...], Labels] = OrderedDict()
        self._last: OrderedDict[tuple[Any, ...], Labels] = OrderedDict()
        """(path, base) -> the labels last worked out for the file there, whatever its
        version: who is told that it cannot be read now (:class:`_Stale`)."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def describe(self) -> str:
        return self.inner.describe()

    def change_mark(self) -> object | None:
        # the labels derive from the inner store's files (heads, sidecars) and fixed settings
        return self.inner.change_mark()

    # -- labels ------------------------------------------------------------------------------

    async def _labelled(
        self,
        info: FileInfo,
        siblings: dict[str, FileInfo] | None = None,
        odd: frozenset[str] = frozenset(),
        folded: frozenset[str] = frozenset(),
    ) -> FileInfo:
        """``info`` with its document labels; ``siblings``, ``odd`` and ``folded`` (a listing
        of its folder, by name, its :meth:`Store.odd_names`, and the case-folded names of
        its sidecars) save looking the sidecar up."""
        target = labelled_file_of(info.path)
        if not info.is_file:
            if info.is_dir and target is not None:  # a folder where a sidecar belongs: its
                # name tells of the file, whose labels it leaves undetermined; hidden with it
                found = await self._target(target, siblings, info)
                if found is not None:
                    return _with_labels(info, found.labels)
            return info
        if target is not None:  # a sidecar shows only to those who may see its file
            described = await self._target(target, siblings, info)
            if described is not None:
                return _with_labels(info, described.labels)
        if siblings is None:
            sidecar = await find_sidecar(self.inner, info.path)
        else:
            listed = listed_sidecar(info.path, siblings, odd)
            if listed is None and info.path.name.casefold() in folded:
                # its sidecar listed in another case: the store decides (it may fold case)
                listed = await find_sidecar(self.inner, info.path)
            sidecar = NO_SIDECAR if listed is None else listed
        return _with_labels(info, await self._labels(info, sidecar))

    async def _target(
        self, target: VPath, siblings: dict[str, FileInfo] | None, sidecar: FileInfo
    ) -> FileInfo | None:
        """The labelled info of the file a sidecar describes, or ``None`` when there is no
        such file (the sidecar is then an ordinary file)."""
        found = siblings.get(target.name) if siblings is not None else None
        if found is None:
            try:
                found = await self.inner.stat(target)
            except (NotFoundError, UnsupportedFileError):  # gone, or a link: never followed
                return None
        if not found.is_file:
            return None
        if labelled_file_of(target) is not None:
            # a sidecar of a sidecar: the labels of the file the first one describes
            return await self._labelled(found)
        # the sidecar is ``sidecar``: no need to look it up again
        seen = Sidecar(sidecar) if sidecar.is_file else Sidecar(problem=ODD)
        try:
            labels = await self._labels(found, seen, gone=True)
        except _SidecarGone:
            if siblings is None:  # looked up by its name, and gone since: not there
                raise NotFoundError(f"{sidecar.path} not found") from None
            # listed, and gone since: an entry of the listing shown to no one
            labels = resolve_labels(
                self._base_of(found), self._order, sidecar_problem="gone since listed"
            )
        return _with_labels(found, labels)

    def _base_of(self, info: FileInfo) -> Labels:
        return info.labels if self._stores_labels and info.labels is not None else self._base

    def _cached(self, info: FileInfo, sidecar: Sidecar) -> Labels | None:
        """The labels worked out for exactly this version of the file and its sidecar."""
        return self._cache.get((*_file_stamp(info), self._base_of(info), sidecar.stamp()))

    async def _labels(
        self,
        info: FileInfo,
        sidecar: Sidecar,
        head: bytes | None = None,
        read_ns: int = 0,
        *,
        gone: bool = False,
    ) -> Labels:
        """The labels of ``info`` with ``sidecar``: from the cache, else worked out from the
        head read now; with ``head`` (read from ``read_ns`` on), worked out from it. Kept
        for the version only where it is settled (:func:`settled`). ``gone``: asked for the
        sidecar's own entry, which is gone too when the sidecar is."""
        base = self._base_of(info)
        key = (*_file_stamp(info), base, sidecar.stamp())
        if head is None:
            labels = self._cache.get(key)
            if labels is not None:
                return labels
            read_ns = time.time_ns()
        try:
            labels = await self._compute(info, base, sidecar, head)
        except _SidecarGone:  # deleted since it was seen (another process): the file has none
            if gone:  # asked for the sidecar's own entry: it is gone too
                raise
            return await self._labels(info, NO_SIDECAR, head, read_ns)
        except NotFoundError:
            raise
        except BastionError as exc:  # cannot read the head or the sidecar now
            last = self._last.get((info.path.parts, base))
            if last is not None:
                # changed since its labels were read (its permissions, say): those labels
                # decide who is told of the fault; no byte is ever served under them
                return _Stale.of(last)
            return resolve_labels(  # fail closed
                base,
                self._order,
                sidecar_problem=f"or file could not be read ({type(exc).__name__})",
            )
        if sidecar.cacheable:
            if settled(read_ns, info, sidecar.info):
                _keep(self._cache, key, labels)
            _keep(self._last, (info.path.parts, base), labels)
        return labels

    def _written(self, info: FileInfo, data: bytes) -> Labels:
        """The labels of the version ``info`` that a write without a sidecar just made of
        ``data``: worked out from the head it has (the one :meth:`_head` would read back) and
        cached under that version once it is settled, as :meth:`_labels` would."""
        base = self._base_of(info)
        key = (*_file_stamp(info), base, NO_SIDECAR.stamp())
        labels = self._cache.get(key)
        if labels is None:
            head = _head_of(data)
            labels = resolve_labels(base, self._order, head=head, where=str(info.path))
            if settled(time.time_ns(), info):  # not just after the write, as a rule
                _keep(self._cache, key, labels)
            _keep(self._last, (info.path.parts, base), labels)
        return labels

    async def _compute(
        self, info: FileInfo, base: Labels, sidecar: Sidecar, head: bytes | None = None
    ) -> Labels:
        if head is None:
            head = await self._head(info)
        data = None
        if sidecar.info is not None:
            try:
                data = await self.inner.read_range(sidecar.info.path, 0, MAX_FRONT_MATTER_BYTES + 1)
            except NotFoundError:
                raise _SidecarGone from None
        return resolve_labels(
            base,
            self._order,
            head=head,
            sidecar=data,
            sidecar_problem=sidecar.problem,
            where=str(info.path),
        )

    async def _head(self, info: FileInfo) -> bytes:
        """The first bytes of the file its labels depend on: a short probe when it cannot open
        with front matter, else :data:`LABEL_BYTES` (as a write's labels are worked out)."""
        probe = await self.inner.read_range(info.path, 0, _PROBE)
        if len(probe) < _PROBE or not _may_open_front_matter(probe):
            return probe
        return await self.inner.read_range(info.path, 0, LABEL_BYTES)

    async def prospective(self, path: VPath, data: bytes) -> Labels:
        """The labels a file at ``path`` would have with content ``data`` and its current
        sidecar (the mount's labels as the base)."""
        sidecar = await find_sidecar(self.inner, path)
        payload = None
        if sidecar.info is not None:
            payload = await self.inner.read_range(sidecar.info.path, 0, MAX_FRONT_MATTER_BYTES + 1)
        return resolve_labels(
            self._base,
            self._order,
            head=data[:LABEL_BYTES],
            sidecar=payload,
            sidecar_problem=sidecar.problem,
            where=str(path),
        )

    async def relabelling(self, path: VPath, data: bytes | None) -> Relabel | None:
        target = labelled_file_of(path)
        if target is None:
            return None
        try:
            found = await self.inner.stat(target)
        except (NotFoundError, UnsupportedFileError):
            return None
        if not found.is_file:
            return None
        try:
            before = (await self._labelled(found)).labels
            head = await self._head(found)
        except NotFoundError:  # deleted since the stat: the sidecar is an ordinary file
            return None
        assert before is not None
        after = resolve_labels(
            self._base_of(found),
            self._order,
            head=head,
            sidecar=data,
            where=str(target),
        )
        return Relabel(target, before, after, tightens(before, after, self._order))

    async def carried(self, path: VPath, labels: Labels, head: bytes) -> bytes | None:
        if labels.undetermined:
            return None
        there = await self.prospective(path, head)
        if tightens(labels, there, self._order):
            return None
        return sidecar_text(joined(labels, there, self._order))

    # -- the store port ----------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self._labelled(await self.inner.stat(path))

    async def entries(self, path: VPath) -> builtins.list[FileInfo]:
        return await self.inner.list(path)  # no labels worked out: stat an entry for them

    async def list(
        self,
        path: VPath,
        *,
        only: Callable[[FileInfo], bool] | None = None,
        sought: Sought | None = None,
    ) -> list[FileInfo]:
        """The entries of ``path`` with their labels; with ``only``, just the entries it keeps
        (a glob's candidates: the others' labels are not worked out); with ``sought``, from
        the store's listing for it (``Store.list_sought``), which keeps every name that may
        be a sidecar too, so a file's labels are what a whole listing gives."""
        if sought is None:
            infos = await self.inner.list(path)
        else:
            infos = await self.inner.list_sought(path, sought.also(_MAY_BE_SIDECAR))
        siblings = {info.path.name: info for info in infos}
        odd = await odd_names_of(self.inner, path) if any(i.is_file for i in infos) else frozenset()
        folded = frozenset(  # files whose sidecar is listed in another case (rare)
            target.name.casefold()
            for name in siblings
            if _may_be_sidecar(name)
            and in_other_case(name)
            and (target := labelled_file_of(path.child(name))) is not None
        )
        listings = _LISTINGS.get()
        if listings is not None and sought is None:
            listings[self, path.parts] = (siblings, odd, folded)
        out: builtins.list[FileInfo] = []
        for info in infos:
            if only is not None and not only(info):
                continue
            known = self._known(info, siblings, odd, folded)
            if known is None:
                known = await self._labelled(info, siblings, odd, folded)
            out.append(known)
        return out

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        return await self.list(path, sought=sought)

    def _known(
        self,
        info: FileInfo,
        siblings: dict[str, FileInfo],
        odd: frozenset[str],
        folded: frozenset[str],
    ) -> FileInfo | None:
        """What :meth:`_labelled` gives for an entry of a listing, when that is known without
        waiting: a folder that is no sidecar's name as it is, an ordinary file whose labels the
        cache holds for its version and its sidecar's; else ``None``."""
        if _may_be_sidecar(info.path.name) and labelled_file_of(info.path) is not None:
            return None  # a sidecar, or a folder where one belongs
        if info.is_dir:
            return info
        if not info.is_file or info.path.name.casefold() in folded:
            return None
        listed = listed_sidecar(info.path, siblings, odd)
        labels = self._cached(info, NO_SIDECAR if listed is None else listed)
        return None if labels is None else _with_labels(info, labels)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        ordinary = labelled_file_of(path) is None
        if ordinary:
            read = await self._read_known(path, offset, length, check)
            if read is not None:
                return read
        patience = Patience(_PATIENCE)
        while True:
            begun = time.time_ns()
            info = await self.stat(path)  # labels first: the check sees them before any byte
            if ordinary and info.is_file and not settled(begun, info):
                sidecar = await find_sidecar(self.inner, path)
                read = await self._read_fresh(path, offset, length, check, sidecar)
                if read is not None:
                    return read
                if not await patience.wait():
                    break
                continue
            if check is not None and info.is_file:
                check(info)
            found, data = await self.inner.read_file(path, offset, length)
            if found.version == info.version and not isinstance(info.labels, _Stale):
                return info, data
            # changed in between: check the new version (the labels may have changed too); or
            # read under labels of the bytes before a change (unreadable then): work them out
            if not await patience.wait():
                break
        if isinstance(info.labels, _Stale):  # its bytes read, never its labels: hidden
            raise NotFoundError(f"{path} not found")
        raise ConflictError(f"{path} kept changing while it was being read; retry")

    async def _read_known(
        self, path: VPath, offset: int, length: int | None, check: ReadCheck | None
    ) -> tuple[FileInfo, bytes] | None:
        """One read of an ordinary file whose labels are already known for the version the
        open file has: its sidecar looked up, then the file opened once; the labels come from
        the cache by that handle's own info and ``check`` sees them before any byte is read.
        ``None`` when they are not known (then the caller works them out and reads)."""
        sidecar = await self._sidecar_of(path)
        if not sidecar.cacheable:
            return None
        seen: list[FileInfo] = []
        missed: list[FileInfo] = []

        def known(raw: FileInfo) -> None:
            labels = self._cached(raw, sidecar) if raw.is_file else None
            if labels is None:
                missed.append(raw)
                raise _Unknown
            info = _with_labels(raw, labels)
            seen.append(info)
            if check is not None:
                check(info)

        try:
            _, data = await self.inner.read_file(path, offset, length, check=known)
        except _Unknown:
            if missed and missed[0].is_file and not settled(time.time_ns(), missed[0]):
                return await self._read_fresh(path, offset, length, check, sidecar)
            return None
        except BastionError:
            if seen:
                raise  # the caller's check refused, or the read failed after it
            return None  # let the full path report it (as it always has)
        return seen[0], data

    async def _read_fresh(
        self,
        path: VPath,
        offset: int,
        length: int | None,
        check: ReadCheck | None,
        sidecar: Sidecar,
    ) -> tuple[FileInfo, bytes] | None:
        """A read of an ordinary file whose version is racy: its labels worked out from the
        head read with the bytes returned, and ``check`` called on them; kept only once
        settled. The range is read with the head in one read from the start of the file
        (after the head, when it starts over :data:`_JOINED` bytes in), then the head is
        read once more: it must be the same bytes of the same version, so that the bytes
        returned were never overtaken by an in-place write under the head they are judged
        by. ``None`` when they differ, or the labels cannot be read now (the caller tries
        again)."""
        read_ns = time.time_ns()
        end = None if length is None else offset + length
        if offset <= _JOINED:
            found, data = await self.inner.read_file(
                path, 0, None if end is None else max(end, _PROBE)
            )
            if (
                end is not None
                and len(data) < min(found.size, LABEL_BYTES)
                and _may_open_front_matter(data[:_PROBE])
            ):  # front matter may run past the range: the head and the range in one read
                found, data = await self.inner.read_file(path, 0, max(end, LABEL_BYTES))
            head, body = _head_of(data), data[offset:end]
        else:
            found, data = await self.inner.read_file(path, 0, LABEL_BYTES)
            head = _head_of(data)
            ranged, body = await self.inner.read_file(path, offset, length)
            if ranged.version != found.version:
                return None
        again, same = await self.inner.read_file(path, 0, len(head))
        if again.version != found.version or same != head:
            return None
        labels = await self._labels(found, sidecar, head, read_ns)
        if isinstance(labels, _Stale):
            return None
        info = _with_labels(found, labels)
        if check is not None:
            check(info)
        return info, body

    async def _sidecar_of(self, path: VPath) -> Sidecar:
        """The sidecar of ``path``: from its folder's listing within :func:`listings_reused`,
        else looked up."""
        listings = _LISTINGS.get()
        listing = None if listings is None else listings.get((self, path.parent.parts))
        if listing is None:
            return await find_sidecar(self.inner, path)
        siblings, odd, folded = listing
        listed = listed_sidecar(path, siblings, odd)
        if listed is None and path.name.casefold() in folded:
            return await find_sidecar(self.inner, path)  # the store decides (it may fold case)
        return NO_SIDECAR if listed is None else listed

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return await self.inner.read_range(path, offset, length)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        if mode is not WriteMode.APPEND:
            refuse_unreadable(self._base, self._order, path, data)
        else:
            await refuse_unreadable_append(self.inner, self._base, self._order, path, data)
        info = await self.inner.write(path, data, mode=mode, if_version=if_version)
        if labelled_file_of(path) is not None:
            return info  # never echo the labels of the file a sidecar describes
        try:
            if mode is not WriteMode.APPEND and info.is_file:
                # the bytes of the version written are ``data``: its head is not read back
                sidecar = await find_sidecar(self.inner, info.path)
                if sidecar.info is None and not sidecar.problem and sidecar.cacheable:
                    return _with_labels(info, self._written(info, data))
            return await self._labelled(info)
        except NotFoundError:  # deleted since by another process: the write itself was done
            gone = "or file changed while read (NotFoundError)"
            return _with_labels(
                info, resolve_labels(self._base_of(info), self._order, sidecar_problem=gone)
            )

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        await self.inner.delete(path, recursive=recursive)

    async def mkdir(self, path: VPath) -> None:
        await self.inner.mkdir(path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        await self.inner.rename(src, dst)

    async def odd_names(self, path: VPath) -> frozenset[str]:
        return await self.inner.odd_names(path)


_MAY_BE_SIDECAR = re.compile("(?s:.*[lL\u0080-\U0010ffff])")
"""The names :func:`_may_be_sidecar` passes, as a pattern of whole names (for a store's
listing for a glob, ``Store.list_sought``): the last character ``l``, ``L`` or not ASCII."""


def _may_be_sidecar(name: str) -> bool:
    """False when ``name`` cannot be a sidecar's in any case: the suffix ends in ``l``, and an
    ASCII last character folds only to its own lower case (a quick test, per listed name)."""
    last = name[-1:]
    return last in "lL" or not last.isascii()


def _may_open_front_matter(probe: bytes) -> bool:
    text = probe.decode(encoding_of(probe), "ignore")
    return text.removeprefix("\ufeff").startswith("---")


def _head_of(data: bytes) -> bytes:
    """What :meth:`DocumentLabels._head` reads of a file whose bytes from its start are
    ``data`` (the whole file, or at least its head)."""
    probe = data[:_PROBE]
    opens = len(probe) == _PROBE and _may_open_front_matter(probe)
    return data[:LABEL_BYTES] if opens else probe


def _file_stamp(info: FileInfo) -> tuple[Any, ...]:
    """A file's version, for the cache of its labels (the version must change with every
    change of its bytes: a local file's holds its ctime, which no writer can set back, and
    labels are kept for it only once it is settled, :mod:`bastion.labels.settled`)."""
    return (info.path.parts, info.version, info.size, info.mtime)


def _keep(
    cache: OrderedDict[tuple[Any, ...], Labels], key: tuple[Any, ...], labels: Labels
) -> None:
    if len(cache) >= _CACHE:
        cache.popitem(last=False)
    cache[key] = labels


class _Stale(Labels):
    """The labels a file had before a change that left its labels unreadable (``chmod 000``
    under the store): they decide who is told of the failure, and who is told "not found"; a
    read that succeeds under them works the labels out again before any byte is returned."""

    __slots__ = ()

    @classmethod
    def of(cls, labels: Labels) -> _Stale:
        return cls(
            labels.tenant, labels.classification, labels.roles, labels.tags, labels.undetermined
        )


def _with_labels(info: FileInfo, labels: Labels | None) -> FileInfo:
    return FileInfo(
        info.path, info.kind, info.size, info.mtime, info.version, labels, info.changed_ns
    )
