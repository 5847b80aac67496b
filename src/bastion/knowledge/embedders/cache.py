"""Embeddings cached by (model name, sha256 of the text), so nothing is embedded twice.

Re-indexing a file whose chunks did not change, or running an evaluation again, reads the
vectors back instead of computing them. :class:`EmbeddingCache` is one SQLite table (a file,
shared safely by several processes through SQLite's own locking and WAL; or ``:memory:``), and
:class:`CachedEmbedder` wraps any embedder: it looks every text up, sends only the misses
(each distinct text once) to the inner embedder, stores them, and returns the rows in input
order. The key includes the embedder's ``name``, which names the model *and* its variant, so
an int8 vector is never served for an fp32 request.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

from bastion.core.errors import StoreError
from bastion.knowledge.embedders.base import Embedder, Vectors

__all__ = ["CachedEmbedder", "EmbeddingCache", "text_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model  TEXT NOT NULL,
    key    BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""
_CHUNK = 500  # keys per SELECT, well under SQLite's bound-parameter limit


def text_key(text: str) -> bytes:
    """sha256 of the text's UTF-8 bytes (lone surrogates kept, never an error)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors by (model name, text key) in SQLite: a file path, or ``None`` for memory."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        try:
            if self.path is None:
                self._db = sqlite3.connect(":memory:", check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the embedding cache {self._where}: {exc}") from exc

    @property
    def _where(self) -> str:
        return str(self.path) if self.path is not None else "(memory)"

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, Vectors]:
        """The cached vectors among ``keys`` (absent keys are simply missing)."""
        found: dict[bytes, Vectors] = {}
        with self._lock:
            try:
                for i in range(0, len(keys), _CHUNK):
                    part = list(keys[i : i + _CHUNK])
                    marks = ",".join("?" * len(part))
                    rows = self._db.execute(
                        f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})",  # noqa: S608
                        [model, *part],
                    )
                    for key, blob in rows:
                        found[bytes(key)] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            except sqlite3.Error as exc:
                raise StoreError(f"embedding cache {self._where} failed: {exc}") from exc
        return found

    def put_many(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        rows = [(model, key, np.asarray(v, dtype="<f4").tobytes()) for key, v in items]
        with self._lock:
            try:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings (model, key, vector) VALUES (?, ?, ?)",
                        rows,
                    )
            except sqlite3.Error as exc:
                raise StoreError(f"embedding cache {self._where} failed: {exc}") from exc

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                (n,) = self._db.execute("SELECT count(*) FROM embeddings").fetchone()
            else:
                query = "SELECT count(*) FROM embeddings WHERE model = ?"
                (n,) = self._db.execute(query, (model,)).fetchone()
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class CachedEmbedder(Embedder):
    """``inner`` with a cache in front: only texts never seen before reach the model."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.hits = 0
        """Texts served from the cache so far (repeats inside one call count once)."""
        self.misses = 0
        """Distinct texts sent to the inner embedder so far."""

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        keys = [text_key(t) for t in texts]
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            first.setdefault(key, i)
        found = await asyncio.to_thread(self.cache.get_many, self.name, list(first))
        found = {k: v for k, v in found.items() if v.shape == (self.dim,)}
        missing = [k for k in first if k not in found]
        self.hits += len(first) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = await self.inner.embed([texts[first[k]] for k in missing])
            fresh = dict(zip(missing, vectors, strict=True))
            await asyncio.to_thread(self.cache.put_many, self.name, fresh.items())
            found.update(fresh)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out
