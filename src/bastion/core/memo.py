"""A bounded memo that forgets everything when full.

Many parts remember answers that are pure functions of their key (a parsed path, a policy
decision, a mask's statistics). Each such memo must stay bounded, and the simplest bound that
costs nothing on a hit is to forget everything once it is full: a hit stays one C-level dict
lookup, and a miss after the clear recomputes what is still in use. This module is the one
place that rule is written.

``Memo`` is a ``dict``: lookups (``get``, ``[]``, ``in``) are the dict's own. It is filled by
item assignment only (``memo[key] = value``, chained assignment included), which is where the
bound is kept; ``update``, ``setdefault`` and ``|=`` bypass it and are not used. Like the
dicts it replaced, a memo shared between threads may lose an entry to a concurrent clear,
never answer a wrong one; ``size`` is then only approximate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["Memo"]

K = TypeVar("K")
V = TypeVar("V")

_ABSENT = object()


class Memo(dict[K, V]):
    """A dict holding at most ``bound`` weight, cleared whole when a new entry would exceed it.

    Each entry weighs 1, or ``weigh(value)`` when given (for example the length of an array,
    to bound memory rather than entries). ``size`` is the weight held now.
    """

    __slots__ = ("_weigh", "bound", "size")

    def __init__(self, bound: int, weigh: Callable[[V], int] | None = None) -> None:
        if bound < 1:
            raise ValueError(f"a memo's bound must be at least 1, got {bound}")
        super().__init__()
        self.bound = bound
        self.size = 0
        self._weigh = weigh

    def __setitem__(self, key: K, value: V) -> None:
        weigh = self._weigh
        old = dict.get(self, key, _ABSENT)
        if old is not _ABSENT:  # a replaced entry gives its weight back
            self.size -= 1 if weigh is None else weigh(old)  # type: ignore[arg-type]
        weight = 1 if weigh is None else weigh(value)
        if self.size + weight > self.bound:
            self.clear()
        dict.__setitem__(self, key, value)
        self.size += weight

    def __delitem__(self, key: K) -> None:
        value = dict.pop(self, key)
        self.size -= 1 if self._weigh is None else self._weigh(value)

    def clear(self) -> None:
        dict.clear(self)
        self.size = 0

    def __repr__(self) -> str:
        return f"Memo(bound={self.bound}, size={self.size}, entries={len(self)})"
