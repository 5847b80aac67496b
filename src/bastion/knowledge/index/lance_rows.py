"""How :class:`~bastion.knowledge.index.lance.LanceIndex` lays its rows out and reads them
back: the table's schema, whole documents in slices, Arrow rows as chunks (one copy of each
label value shared), and the C allocator's settings for a large open."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]

from bastion.knowledge.index.models import DocumentMeta, IndexedChunk

__all__ = ["from_arrow", "from_row", "malloc_trim", "schema", "slices"]


def schema(dim: int | None) -> pa.Schema:
    """The table's columns (``dim``: the vector size, ``None`` for a keyword-only index)."""
    fields = [
        pa.field("chunk_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("seq", pa.int32(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("start_line", pa.int32(), nullable=False),
        pa.field("end_line", pa.int32(), nullable=False),
        pa.field("section", pa.string(), nullable=False),
        pa.field("title", pa.string()),
        pa.field("date", pa.string()),
        pa.field("tenant", pa.string()),
        pa.field("classification", pa.string(), nullable=False),
        pa.field("roles", pa.list_(pa.string()), nullable=False),
        pa.field("tags", pa.list_(pa.string()), nullable=False),
        pa.field("version", pa.string()),
    ]
    if dim is not None:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


@functools.cache
def malloc_trim() -> Any:
    """Keep glibc's ``malloc`` from serving large blocks from its heap (once per process);
    its ``malloc_trim``, or ``None`` where the C library is not glibc.

    By default glibc raises its mmap threshold to the size of each large block freed (up to
    32 MiB), so after the first few numpy arrays are freed, arrays of up to 32 MiB come from
    the heap; an open makes and frees many (each slice's rows, postings being merged) between
    the arrays it keeps, and the heap it leaves is full of holes it cannot give back (a fifth
    of the process at scale: ``bench/scale_corpus.py``, ``docs/benchmarks.md``).
    Setting the threshold (to its default, 128 KiB) turns the adjustment off: each large
    block is its own mapping, returned to the system when freed."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    return trim


def slices(doc_ids: pa.ChunkedArray, size: int) -> Iterator[tuple[int, int]]:
    """``[lo, hi)`` bounds of about ``size`` rows over ``doc_ids`` (sorted), each ending at a
    document's end: a document's chunks are taken in together, as they were written (a chunk
    indexes only what it adds to the one before, :func:`own_texts`)."""
    n = len(doc_ids)
    if n == 0:
        return
    ids = doc_ids.combine_chunks() if isinstance(doc_ids, pa.ChunkedArray) else doc_ids
    change = pc.not_equal(ids.slice(1), ids.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    starts = np.append(np.flatnonzero(change) + 1, n)  # where each document after the first starts
    lo = 0
    while lo < n:
        hi = int(starts[np.searchsorted(starts, min(lo + size, n))]) if lo + size < n else n
        yield lo, hi
        lo = hi


def from_arrow(
    table: pa.Table, shared: dict[object, Any] | None = None, order: Any = None
) -> list[IndexedChunk]:
    """Rows of the table as chunks, in ``order`` (row positions) when given; the vectors as
    rows of one array (no Python floats). ``shared`` keeps one copy of each label value,
    label set, section and document record across calls (a document's chunks, and documents
    of the same labels, share them)."""
    vectors = None
    if "vector" in table.column_names:
        column = table.column("vector")
        if column.null_count == 0:
            dim = column.type.list_size
            parts = [
                part.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
                for part in column.chunks
            ]
            vectors = np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)
            if order is not None:
                vectors = vectors[order]
            table = table.drop_columns(["vector"])
    rows = table.to_pylist()
    if order is not None:
        rows = [rows[i] for i in order]
    one = {} if shared is None else shared
    if vectors is None:
        return [from_row(row, None, one) for row in rows]
    return [from_row(row, vector, one) for row, vector in zip(rows, vectors, strict=True)]


def from_row(row: dict[str, Any], vector: Any, shared: dict[object, Any]) -> IndexedChunk:
    def same(value: Any) -> Any:
        return shared.setdefault(value, value)

    doc = same(
        DocumentMeta(
            doc_id=row["doc_id"],
            path=row["path"],
            title=same(row["title"]),  # often a section's name too
            date=row["date"],
            tenant=same(row["tenant"]),
            classification=same(row["classification"]),
            roles=same(frozenset(row["roles"])),
            tags=same(frozenset(row["tags"])),
            version=row["version"],
        )
    )
    if vector is None:
        vector = row.get("vector")
    return IndexedChunk(
        chunk_id=row["chunk_id"],
        doc=doc,
        seq=row["seq"],
        text=row["text"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        section=same(row["section"]),
        vector=None if vector is None else np.asarray(vector, dtype=np.float32),
    )
