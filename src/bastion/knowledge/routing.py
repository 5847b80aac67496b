"""Routing a query to a subset of the sources (index tables) an asker may query.

By default a search visits every source its filter admits. A :data:`Router` (for example a
chat model that reads the question and the sources' descriptions) may pick fewer. Whatever it
answers, :func:`route` keeps only sources from the authorized list, so a router can narrow a
search but never widen it; when it fails or picks nothing usable, every authorized source is
searched.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace

from bastion.knowledge.index.models import IndexFilter, source_of
from bastion.knowledge.index.port import Index

__all__ = ["Router", "authorized_sources", "route"]

Router = Callable[[str, Sequence[str]], Iterable[str] | Awaitable[Iterable[str]]]
"""``router(query, sources)`` -> the sources worth searching (a subset of ``sources``); a
coroutine function for routers that wait on something (a chat model), else keep it quick:
a plain function runs on the event loop."""

_log = logging.getLogger(__name__)


def authorized_sources(index: Index, flt: IndexFilter) -> list[str]:
    """The sources holding at least one document the filter admits, per document (its
    ``access`` check included): a source whose every document is hidden from the asker is
    not shown to a router, and so cannot change what it picks."""
    admitted = getattr(index, "sources_admitted", None)
    if callable(admitted):
        found = set(admitted(flt))
    else:
        found = {source_of(meta.path) for meta in index.documents().values() if flt.admits(meta)}
    if flt.sources is not None:
        found &= flt.sources
    return sorted(found)


async def route(router: Router, query: str, index: Index, flt: IndexFilter) -> IndexFilter:
    """``flt`` narrowed to the sources ``router`` picks among the authorized ones."""
    allowed = authorized_sources(index, flt)
    if len(allowed) <= 1:
        return flt
    try:
        answer = router(query, tuple(allowed))
        if inspect.isawaitable(answer):
            answer = await answer
        picked = {str(s) for s in answer} & set(allowed)
    except Exception as exc:  # noqa: BLE001 - a router may fail in any way: search them all
        _log.warning("source router failed (%s); searching every authorized source", type(exc))
        picked = set()
    if not picked:
        return flt
    return replace(flt, sources=frozenset(picked))
