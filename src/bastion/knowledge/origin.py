"""What an index folder was built from, kept beside it, so that it is never silently
re-pointed at other folders or another embedder.

The first time a ``[knowledge]`` folder is opened for a workspace, :data:`ORIGIN_FILE` is
written in it: each mount's prefix with a digest of where its files come from (never the
source itself: a URL may carry a host, a user or, expanded from a variable, a password), and
the embedder's name and vector size. Every later open compares (:func:`check_origin`):

* a mount of the record that now reads another source, or is no longer mounted, and another
  embedder (another model or vector size, a keyword-only index opened with a model, or the
  reverse) are refused with
  :class:`IndexMismatchError`: one line naming the prefixes and the embedders that differ, and
  the fix (another folder, or ``bastion reindex --rebuild``, which is :func:`clear_index`);
* a mount the record does not know yet is taken in and recorded: nothing indexed is lost or
  replaced, and the next index run adds its files;
* the same model in another number format (``...:int8`` recorded, ``...:bf16`` now: the
  default embedder follows the CPU) is accepted: variants of one model share a vector space
  (:func:`~bastion.knowledge.embedders.base.vector_space`); the record keeps the name it was
  built with.

A source's digest is taken from a canonical spelling (:func:`source_key`): a folder or SQLite
file by its path *relative to the index folder* (a project moved whole keeps its index; two
projects sharing one absolute index folder do not share documents), any other URL without its
password, with its non-secret options.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from bastion.core.errors import ConfigurationError, IndexMismatchError
from bastion.knowledge.embedders.base import same_space

__all__ = [
    "ORIGIN_FILE",
    "IndexMismatchError",
    "IndexOrigin",
    "check_origin",
    "clear_index",
    "record_origin",
    "same_vectors",
    "source_key",
]

ORIGIN_FILE = "index-origin.json"
"""The record, in the index folder."""

_VERSION = 1
_LOCAL_SCHEMES = frozenset({"file", "sqlite"})
_SECRET = re.compile(r"pass|secret|token|key|credential|auth|session|signature", re.IGNORECASE)
"""Option and query names left out of a source's spelling: a rotated credential is the same
source."""
_INDEX_PARTS = (
    "tables",
    "lance",
    "index.sqlite",
    "index.sqlite-wal",
    "index.sqlite-shm",
    ORIGIN_FILE,
)
"""What :func:`clear_index` removes: the index's tables or SQLite file (``Knowledge.open``'s
layouts) and the record. The embedding cache (vectors by model name and text) is kept: a
rebuild reuses it."""
_DEFAULT_FIX = (
    "to index this workspace there instead run `bastion reindex --rebuild` (it starts the "
    "index over), or give [knowledge] another folder"
)


def _embedder_text(name: str | None, dim: int | None) -> str:
    return "none (keyword only)" if name is None else f"{name} ({dim} dimensions)"


@dataclass(frozen=True, kw_only=True)
class IndexOrigin:
    """The mounts and the embedder an index is (to be) built from."""

    mounts: Mapping[str, str] = field(default_factory=dict)
    """Prefix -> digest of the mount's source (:func:`source_key`)."""
    embedder: str | None = None
    """The embedder's name (model and variant) the index was first built with; ``None`` for a
    keyword-only index. Compared by vector space (another variant of the model is the same)."""
    dim: int | None = None
    """Its vector size; ``None`` for a keyword-only index."""

    @classmethod
    def of(
        cls, sources: Iterable[tuple[str, str]], *, embedder: str | None, dim: int | None
    ) -> IndexOrigin:
        """From ``(prefix, source)`` pairs (sources spelled by :func:`source_key`)."""
        return cls(
            mounts={prefix: _digest(source) for prefix, source in sources},
            embedder=embedder,
            dim=dim if embedder is not None else None,
        )

    def differences(self, now: IndexOrigin) -> list[str]:
        """What ``now`` changes that would re-point this index (mounts only added are not)."""
        out = [
            f"{prefix}: another source" if prefix in now.mounts else f"{prefix}: no longer mounted"
            for prefix, digest in sorted(self.mounts.items())
            if now.mounts.get(prefix) != digest
        ]
        if not same_vectors(self.embedder, self.dim, now.embedder, now.dim):
            out.append(
                f"embedder: built with {_embedder_text(self.embedder, self.dim)}, "
                f"now {_embedder_text(now.embedder, now.dim)}"
            )
        return out

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _VERSION,
                "mounts": dict(sorted(self.mounts.items())),
                "embedder": {"name": self.embedder, "dim": self.dim},
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str, where: Path) -> IndexOrigin:
        try:
            data = json.loads(text)
            mounts = data["mounts"]
            embedder = data["embedder"]
            if data.get("version") != _VERSION or not isinstance(mounts, dict):
                raise ValueError
            return cls(
                mounts={str(k): str(v) for k, v in mounts.items()},
                embedder=embedder["name"],
                dim=embedder["dim"],
            )
        except (ValueError, KeyError, TypeError):
            raise ConfigurationError(
                f"{where} cannot be read; if the index is intact delete that file (the next "
                "open records the workspace again), else run `bastion reindex --rebuild`"
            ) from None


def same_vectors(a: str | None, a_dim: int | None, b: str | None, b_dim: int | None) -> bool:
    """Whether vectors of embedder ``a`` and embedder ``b`` (names, ``None`` for none) may
    share an index: the same vector space and size, or both keyword-only."""
    if a is None or b is None:
        return a is b
    return a_dim == b_dim and same_space(a, b)


def _digest(source: str) -> str:
    return "sha256:" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def source_key(
    url: str,
    options: Mapping[str, Any] | None = None,
    *,
    relative_to: Path,
    index_folder: Path,
) -> str:
    """The canonical spelling of a mount's source, for its digest. A ``file:`` or ``sqlite:``
    path (relative ones taken from ``relative_to``, as the store registry does) is spelled
    relative to ``index_folder``; any other URL keeps its scheme, user, host, port, path and
    query, without a password and without query parameters or options that name a credential."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme in _LOCAL_SCHEMES:
        path = Path(unquote(parts.path)).expanduser()
        where = (path if path.is_absolute() else relative_to / path).resolve()
        return f"{scheme}:{os.path.relpath(where, index_folder.resolve())}"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if parts.username:
        host = f"{parts.username}@{host}"
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query) if not _SECRET.search(k)))
    spelled = urlunsplit((scheme, host, parts.path, query, ""))
    kept = {k: str(v) for k, v in sorted((options or {}).items()) if not _SECRET.search(k)}
    return spelled + (" " + json.dumps(kept, sort_keys=True) if kept else "")


def check_origin(folder: Path, origin: IndexOrigin) -> IndexOrigin | None:
    """Check that the index in ``folder`` was built from ``origin``; return the record to
    write once the index is open (:func:`record_origin`: the first time all of ``origin``,
    later the mounts it adds), or ``None`` when the record already says it all. Raises
    :class:`IndexMismatchError` when ``origin`` would re-point the index (see the module
    doc)."""
    record = folder / ORIGIN_FILE
    try:
        text = record.read_text(encoding="utf-8")
    except FileNotFoundError:
        return origin
    except OSError as exc:
        raise ConfigurationError(f"cannot read {record}: {exc.strerror}") from None
    known = IndexOrigin.from_json(text, record)
    differences = known.differences(origin)
    if differences:
        problem = (
            f"the index in {folder} was built from other mounts or another embedder "
            f"({'; '.join(differences)})"
        )
        raise IndexMismatchError(f"{problem}; {_DEFAULT_FIX}", problem=problem)
    if set(origin.mounts) <= set(known.mounts):
        return None
    return IndexOrigin(
        mounts={**origin.mounts, **known.mounts}, embedder=known.embedder, dim=known.dim
    )


def record_origin(folder: Path, origin: IndexOrigin) -> None:
    """Write ``origin`` as the record of the index in ``folder`` (atomically)."""
    _write(folder / ORIGIN_FILE, origin.to_json())


def _write(record: Path, text: str) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_name(f".{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(record)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise ConfigurationError(f"cannot write {record}: {exc.strerror}") from None


def clear_index(folder: Path) -> None:
    """Throw away the index in ``folder`` and its record, keeping the embedding cache (what
    ``bastion reindex --rebuild`` does first; the next open records the workspace anew).
    Only the index's own entries are removed, never anything else in the folder. Run it
    while no other process has the index open."""
    for name in _INDEX_PARTS:
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
