"""Exact top-k BM25 without scoring every matching document (MaxScore, in SQL over the
counts the writes keep).

What a term adds to a document's score is below ``idf * (k1 + 1)`` (``tf / (tf + K)`` is below
1), and its ``idf`` comes from its document count, kept in ``$df``: so before any posting is
read, each query term has an upper bound. Terms are taken rarest first (highest bound). The
documents holding one of the *essential* terms taken so far are the candidates; each is
scored exactly (its postings of the other terms found through its chunks, by the primary key
``(rid, term)``), and the ``k``-th best candidate's score is a floor under the ``k``-th best
document's. A document holding none of the essential terms scores at most the sum of the
other terms' bounds: when that sum is below the floor (less the margin :func:`bm25_query`
keeps for ties), no such document can be among the best, and the frequent terms' postings
were never read in full. Otherwise the essential terms grow to the fewest whose rest is below
the floor (or by one while fewer than ``k`` documents were found), and the candidates are
scored again; with every term essential the candidates are every matching document.

The ranking is the unpruned query's: the same document scores (the same expression over the
same counts, summed in term order), the same best documents (every one within the margin of
the ``k``-th), then the same chunk scoring (:func:`_pg_query.best_chunks`). Only unfiltered
searches with the index's own statistics are pruned (a filter's counts are those of what it
admits, which ``$df`` does not hold), and only when the query terms' postings are many
(:data:`PRUNE_FROM`): below that one statement over every posting is cheaper than the rounds.
A round runs only when it is expected to cost less than half of reading every posting
(:data:`PROBE_COST`); a query of frequent words only, whose rarest word is in thousands of
documents, gets the unpruned statement at once or after one round.
"""

from __future__ import annotations

import math
from typing import Any

import psycopg
from psycopg import sql

from bastion.knowledge.index._pg_query import Where, best_chunks, bm25_query, doc_scores
from bastion.knowledge.index._pg_schema import TableNames

__all__ = ["PROBE_COST", "PRUNE_FROM", "search"]

PRUNE_FROM = 20_000
"""Query terms holding more postings than this (together) are searched with pruning."""

PROBE_COST = 5
"""What looking up one term of one chunk by the primary key costs, in postings read in term
order: a lookup reads a few index pages, mostly outside the buffer cache, where a page of the
covering term index holds about a hundred postings (``docs/benchmarks.md``)."""

_SLACK = 1e-9
"""Relative slack on the bounds and the floor, far above the rounding of the sums."""


def _counts(names: TableNames) -> sql.Composed:
    return sql.SQL(
        """SELECT r.docs, r.chunks, f.term, f.docs, f.chunks
        FROM {registry} r LEFT JOIN {df} f ON f.term = ANY(%(terms)s::text[]) AND f.docs > 0
        WHERE r.name = %(name)s"""
    ).format(registry=names.registry, df=names.df)


def _candidates(names: TableNames) -> sql.Composed:
    """The documents holding an essential term, scored exactly; those within the margin of
    the ``k``-th best, with its score (``NULL`` when fewer than ``k``). Parameters: ``name``,
    ``terms`` and ``dfs`` (every query term held, its document count), ``essential``,
    ``others``, ``k1``, ``b``, ``k``."""
    return sql.SQL(
        """WITH dstats AS (
            SELECT docs::float8 AS n,
                   greatest(total_len::float8 / greatest(docs::float8, 1), 1e-9) AS avgdl
            FROM {registry} WHERE name = %(name)s
        ), given AS (
            SELECT * FROM unnest(%(terms)s::text[], %(dfs)s::float8[]) AS g(term, df)
        ), essential AS (
            SELECT p.doc_id, p.term, p.tf FROM {terms} p
            WHERE p.term = ANY(%(essential)s::text[])
        ), candidates AS (
            SELECT DISTINCT doc_id FROM essential
        ), others AS (
            SELECT c.doc_id, p.term, p.tf
            FROM candidates d JOIN {chunks} c ON c.doc_id = d.doc_id
                JOIN {terms} p ON p.rid = c.rid
            WHERE p.term = ANY(%(others)s::text[])
        ), doc_terms AS (
            SELECT doc_id, term, sum(tf)::float8 AS tf
            FROM (SELECT * FROM essential UNION ALL SELECT * FROM others) a
            GROUP BY doc_id, term
        ), doc_scores AS ({doc_scores}), kth AS (
            SELECT score FROM doc_scores ORDER BY score DESC OFFSET %(k)s - 1 LIMIT 1
        )
        SELECT d.doc_id, d.score, (SELECT score FROM kth) FROM doc_scores d
        WHERE d.score >= coalesce(
            (SELECT score - abs(score) * 1e-9 FROM kth), '-Infinity'::float8)"""
    ).format(
        registry=names.registry,
        terms=names.terms,
        chunks=names.chunks,
        doc_scores=doc_scores(names.docs, sql.Identifier("given")),
    )


def _chunks(names: TableNames) -> sql.Composed:
    """The ``k`` best chunks of the best documents (``best``, ``scores``). Parameters:
    ``name``, ``terms`` and ``entry_dfs`` (each term's chunk count), ``k1``, ``b``, ``k``."""
    return sql.SQL(
        """WITH cstats AS (
            SELECT chunks::float8 AS n,
                   greatest(total_len::float8 / greatest(chunks::float8, 1), 1e-9) AS avgdl
            FROM {registry} WHERE name = %(name)s
        ), best_docs AS (
            SELECT * FROM unnest(%(best)s::text[], %(scores)s::float8[]) AS b(doc_id, score)
        ), given AS (
            SELECT * FROM unnest(%(terms)s::text[], %(entry_dfs)s::float8[]) AS g(term, df)
        ), postings AS (
            SELECT p.rid, p.doc_id, p.term, p.tf, p.length, g.df
            FROM best_docs b JOIN {chunks} c ON c.doc_id = b.doc_id
                JOIN {terms} p ON p.rid = c.rid JOIN given g ON g.term = p.term
            WHERE p.term = ANY(%(terms)s::text[])
        ), {best_chunks}"""
    ).format(
        registry=names.registry,
        terms=names.terms,
        chunks=names.chunks,
        best_chunks=best_chunks(names),
    )


def search(
    cur: psycopg.Cursor[Any], names: TableNames, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """The rows of the unfiltered :func:`bm25_query` (:data:`CHUNK_COLUMNS`, the score) for
    ``params`` (``name``, ``terms``, ``k1``, ``b``, ``k``), pruned when the terms' postings
    are many. Run in one snapshot: the counts and the postings must agree."""
    cur.execute(_counts(names), params)
    found = cur.fetchall()
    if not found:  # no registry row: the caller's next statement reports the drop
        cur.execute(bm25_query(names, Where()), params)
        return cur.fetchall()
    n, per_doc = float(found[0][0]), float(found[0][1]) / max(float(found[0][0]), 1.0)
    held = {str(r[2]): (int(r[3]), int(r[4])) for r in found if r[2] is not None}
    if not held:
        return []
    postings = sum(chunks for _, chunks in held.values())
    if postings <= PRUNE_FROM:
        cur.execute(bm25_query(names, Where()), params)
        return cur.fetchall()
    k1, k = float(params["k1"]), int(params["k"])
    bound = {
        t: math.log(1 + (n - df + 0.5) / (df + 0.5)) * (k1 + 1) * (1 + _SLACK)
        for t, (df, _) in held.items()
    }
    order = sorted(held, key=lambda t: (-bound[t], t))  # rarest first
    terms = sorted(held)
    given = {**params, "terms": terms, "dfs": [float(held[t][0]) for t in terms]}
    taken, found_docs = 0, 0
    while taken < len(order) and found_docs < k:  # to begin, the rarest terms with k documents
        found_docs += held[order[taken]][0]
        taken += 1
    while True:
        essential, others = order[:taken], order[taken:]
        candidates = min(n, sum(held[t][0] for t in essential))
        probes = candidates * per_doc * len(others)
        if 2 * (sum(held[t][1] for t in essential) + PROBE_COST * probes) >= postings:
            # the round would cost half of reading every posting or more (the essential
            # terms' postings, each candidate chunk's other terms looked up): one statement
            # over every posting instead
            cur.execute(bm25_query(names, Where()), params)
            return cur.fetchall()
        cur.execute(_candidates(names), {**given, "essential": essential, "others": others})
        best = cur.fetchall()
        kth = best[0][2] if best else None
        floor = None if kth is None else float(kth) - abs(float(kth)) * _SLACK * 2
        rest = [sum(bound[t] for t in order[i:]) for i in range(len(order))]
        if floor is not None and rest[taken] < floor:
            break
        # the fewest rarest terms whose rest is below the floor; one more while it is unknown
        taken = (
            taken + 1
            if floor is None
            else next((i for i in range(taken + 1, len(order)) if rest[i] < floor), len(order))
        )
    if not best:
        return []
    cur.execute(
        _chunks(names),
        {
            **params,
            "terms": terms,
            "entry_dfs": [float(held[t][1]) for t in terms],
            "best": [str(r[0]) for r in best],
            "scores": [float(r[1]) for r in best],
        },
    )
    return cur.fetchall()
