"""The filter's ``access`` callable in SQL: run in Python on each distinct labelling of the
documents the rest of the filter admits, sent to the query as the labellings it admits (or,
when fewer, the ones it refuses).

Labellings are identified by ``meta_key``, a digest of every label of a document. Answers are
kept per filter (only when it has an ``access_key``: without one, two checks could not be told
apart) and asked again only for labellings never seen, so a guard's path policy runs once per
document version, not once per search. The lists derived from them are valid for one index
generation (the registry's counter, bumped by every write); the caller reads the generation,
the labellings and then searches in one snapshot, so a labelling written in between is never
let through unchecked, and the list of refusals is exact.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from bastion.knowledge.index._pg_query import DOC_COLUMNS, Where, columns, meta_from_row, where
from bastion.knowledge.index._pg_schema import TableNames
from bastion.knowledge.index.models import IndexFilter

__all__ = ["AccessCache"]

_FILTERS = 256


@dataclass(slots=True)
class _Verdicts:
    answers: dict[str, bool] = field(default_factory=dict)
    """meta_key -> what the check answered."""
    generation: int = -1
    admitted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class AccessCache:
    """Answers of access checks for one index, for the most recent filters."""

    def __init__(self, names: TableNames) -> None:
        self._names = names
        self._lock = threading.Lock()
        self._filters: OrderedDict[IndexFilter, _Verdicts] = OrderedDict()

    def restrict(self, cur: psycopg.Cursor[Any], flt: IndexFilter, out: Where) -> None:
        """Add ``flt.access`` to ``out`` (which holds the rest of ``flt``)."""
        verdicts = self._verdicts(cur, flt)
        if not verdicts.admitted:
            out.empty = True
        elif len(verdicts.refused) < len(verdicts.admitted):
            if verdicts.refused:
                out.add("NOT (c.meta_key = ANY(%(f_refused)s::text[]))", f_refused=verdicts.refused)
        else:
            out.add("c.meta_key = ANY(%(f_admitted)s::text[])", f_admitted=verdicts.admitted)

    def _verdicts(self, cur: psycopg.Cursor[Any], flt: IndexFilter) -> _Verdicts:
        assert flt.access is not None
        names = self._names
        cur.execute(
            sql.SQL("SELECT generation FROM {} WHERE name = %s").format(names.registry),
            [names.table],
        )
        row = cur.fetchone()
        generation = int(row[0]) if row else -1
        cacheable = flt.access_key is not None
        cached = None
        if cacheable:
            with self._lock:
                cached = self._filters.get(flt)
                if cached is not None:
                    self._filters.move_to_end(flt)
                    if cached.generation == generation:
                        return cached
        answers = dict(cached.answers) if cached is not None else {}
        docs = where(flt, section=False)
        cur.execute(
            sql.SQL("SELECT DISTINCT c.meta_key FROM {} c WHERE {}").format(
                names.chunks, docs.clause()
            ),
            docs.params,
        )
        keys = [r[0] for r in cur.fetchall()]
        unknown = [key for key in keys if key not in answers]
        if unknown:
            cur.execute(
                sql.SQL(
                    "SELECT DISTINCT ON (c.meta_key) c.meta_key, {} FROM {} c "
                    "WHERE c.meta_key = ANY(%s::text[])"
                ).format(columns(DOC_COLUMNS), names.chunks),
                [unknown],
            )
            for found in cur.fetchall():
                answers[found[0]] = bool(flt.access(meta_from_row(found[1:])))
        verdicts = _Verdicts(
            answers=answers,
            generation=generation,
            admitted=[key for key in keys if answers.get(key)],
            refused=[key for key in keys if not answers.get(key)],
        )
        if cacheable:
            with self._lock:
                self._filters[flt] = verdicts
                self._filters.move_to_end(flt)
                while len(self._filters) > _FILTERS:
                    self._filters.popitem(last=False)
        return verdicts
