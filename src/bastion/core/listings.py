"""Folder listings held for the length of one read-only call (``list``, ``glob``, ``grep``).

One listing through the guard asks its store for the same folder several times: to tell
whether the folder is there for the principal (it holds something the principal may see), to
list it, for the odd names and sidecars in it, and, for each subfolder, whether that one is
there. Within :func:`held_listings` a store that supports it (the local store) answers every
one of these from one pass over the folder, made once per call: the entries and the odd names
come from the same read of the folder, so they agree with each other. A store may also list,
in the same trip to its worker thread, the folders below the one asked for (``ahead`` levels,
breadth first, within a bound of its own) and those the call said it is about to ask for
(:meth:`Held.expect`: a walk's next level).

What is held is the store's raw listing, below the guard: the guard still decides every entry,
and a file is still read through it. Outside :func:`held_listings` nothing is held, so a
change between two calls is always seen; inside, the call answers as of the one pass over each
folder. Only calls that change nothing hold listings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from bastion.core.models import FileInfo
from bastion.core.paths import VPath

__all__ = ["Held", "Listing", "Sought", "held_listings", "held_now"]

Listing = tuple[list[FileInfo], frozenset[str]]
"""A folder's entries (``Store.list``) and odd names (``Store.odd_names``), from one pass."""


@dataclass(frozen=True, slots=True)
class Sought:
    """What a walk wants of the folders below one of them (a glob), told to the store below
    the guard (``Store.list_sought``) so that it can skip the rest cheaply: the files whose
    names none of ``names`` matches whole may be left out of a listing (a store that can tell
    a file from a folder by its directory entry alone never looks them up), and folders
    ``into`` refuses (store paths) are not listed ahead. Folders are always given: the guard
    decides on every entry that is given, and the walk decides where it goes."""

    names: tuple[re.Pattern[str], ...]
    """Patterns of a file's name as the store holds it (their flags inline, as ``(?s:...)``):
    a file is kept when one of them matches the whole name."""
    into: Callable[[VPath], bool]
    """Whether the walk may go into the folder at this store path (listing it ahead pays)."""
    keeps: Callable[[str], object] = field(init=False, repr=False, compare=False)
    """The patterns of ``names`` as one ``fullmatch`` (a match, or ``None``)."""
    _also: dict[re.Pattern[str], Sought] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        names = self.names
        one = (
            names[0] if len(names) == 1 else re.compile("|".join(f"(?:{p.pattern})" for p in names))
        )
        object.__setattr__(self, "keeps", one.fullmatch)

    def also(self, names: re.Pattern[str]) -> Sought:
        """This wish, keeping the names ``names`` matches too (equal for equal patterns)."""
        made = self._also.get(names)
        if made is None:
            made = self._also[names] = Sought((*self.names, names), self.into)
        return made


class Held:
    """The listings held by one call, by store and folder."""

    __slots__ = ("_expected", "_expected_set", "ahead", "folders", "sought")

    def __init__(self, ahead: int | None) -> None:
        self.ahead = ahead
        """How many levels below a folder listed a store may list with it (``None``: as deep
        as its own bound allows)."""
        self.folders: dict[tuple[object, tuple[str, ...]], Listing] = {}
        self.sought: dict[tuple[object, tuple[str, ...]], tuple[Sought, Listing]] = {}
        """Listings made for a :class:`Sought` (files it does not want may be left out), by
        store and folder: they answer only that wish; their odd names are all there."""
        self._expected: list[tuple[str, ...]] = []
        self._expected_set: frozenset[tuple[str, ...]] = frozenset()

    def get(self, store: object, parts: tuple[str, ...]) -> Listing | None:
        return self.folders.get((store, parts))

    def put(self, store: object, parts: tuple[str, ...], listing: Listing) -> None:
        self.folders[store, parts] = listing

    def get_sought(self, store: object, parts: tuple[str, ...], sought: Sought) -> Listing | None:
        """A listing held that answers ``sought`` for the folder: a whole one, or one made
        for the same wish."""
        whole = self.folders.get((store, parts))
        if whole is not None:
            return whole
        made = self.sought.get((store, parts))
        return made[1] if made is not None and made[0] == sought else None

    def odd(self, store: object, parts: tuple[str, ...]) -> frozenset[str] | None:
        """The folder's odd names, from any listing held of it (each has them all)."""
        whole = self.folders.get((store, parts))
        if whole is not None:
            return whole[1]
        made = self.sought.get((store, parts))
        return None if made is None else made[1][1]

    def expect(self, folders: list[tuple[str, ...]]) -> None:
        """Say that the call is about to list these folders, in this order, from one store (a
        walk's next level): that store may list them in the trip it makes for the first."""
        self._expected = folders
        self._expected_set = frozenset(folders)

    def expected(self, store: object, first: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The folders expected with ``first`` and not held yet for ``store`` (``first`` left
        out); none when ``first`` is not one of them."""
        if first not in self._expected_set:
            return []
        held, sought = self.folders, self.sought
        return [
            f
            for f in self._expected
            if f != first and (store, f) not in held and (store, f) not in sought
        ]


_HELD: ContextVar[Held | None] = ContextVar("bastion_held_listings", default=None)


@contextmanager
def held_listings(ahead: int | None = 0) -> Iterator[Held]:
    """Within: each folder is listed once (see the module doc). Nested, the outer call's
    listings are the ones held."""
    outer = _HELD.get()
    if outer is not None:
        yield outer
        return
    current = Held(ahead)
    token = _HELD.set(current)
    try:
        yield current
    finally:
        _HELD.reset(token)


def held_now() -> Held | None:
    """The listings the current call holds, or ``None`` outside :func:`held_listings`."""
    return _HELD.get()
