"""Stores and mounts by URL: one line per scheme, each store imported only when used.

=====================================  ==============================================
``memory://``                          :class:`~bastion.stores.memory.MemoryStore` (gone with
                                       the process)
``file:///abs/path``, ``file:rel``     :class:`~bastion.stores.local.LocalStore`
``sqlite:///abs/ws.db``, ``sqlite:rel.db``  :class:`~bastion.stores.sqlite.SqliteStore` (file
                                       and folder created when missing)
``postgresql://user@host/db``          :class:`~bastion.stores.postgres.PostgresStore`
``s3://bucket/prefix``, ``gs://``, ...  :class:`~bastion.stores.fsspec.FsspecStore` (any
                                       protocol fsspec knows)
=====================================  ==============================================

Another scheme opens a store that a third-party distribution declares in the ``bastion.stores``
entry-point group (as fsspec's implementations are found): the entry point's name is the
scheme, its object a callable ``factory(url, **options) -> Store`` (a store class taking the
URL will do). Bastion's own schemes come first and cannot be replaced by a plug-in; a plug-in
comes before fsspec's other protocols. See ``docs/stores.md`` ("Plug in a store").

A relative path (``file:docs``, ``sqlite:data/ws.db``) is taken from ``relative_to`` (the
folder of the workspace file that names it, or the current folder). ``options`` go to the
store's constructor (``namespace`` for PostgreSQL, ``chunk_size`` for SQLite; for fsspec URLs
they are the filesystem's storage options: ``endpoint_url``, ``key``, ``secret``, ..., except
``single_process``, which goes to the store).

Errors are one line and never quote the URL, which may carry a password: they name the
scheme, and the mount when there is one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from bastion.core.errors import ConfigurationError
from bastion.core.extras import needs
from bastion.core.models import Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.ports import Store

__all__ = ["ENTRY_POINT_GROUP", "SCHEMES", "mount_from_url", "plugin_schemes", "store_from_url"]

ENTRY_POINT_GROUP = "bastion.stores"
"""The entry-point group third-party stores declare themselves in (name: the URL scheme)."""

Opener = Callable[[str, SplitResult, Path, dict[str, Any]], Store]


def _memory(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
    from bastion.stores.memory import MemoryStore

    if parts.netloc or parts.path.strip("/") or options:
        raise ConfigurationError("memory:// takes no path and no options")
    return MemoryStore()


def _file(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
    from bastion.stores.local import LocalStore

    return LocalStore(_local_path(parts, base), **options)


def _sqlite(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
    from bastion.stores.sqlite import SqliteStore

    path = _local_path(parts, base)
    if options.get("create", True):  # the file is created when missing: its folder too
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot create the folder of the SQLite file: {exc.strerror}"
            ) from None
    return SqliteStore(path, **options)


def _postgres(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
    with needs("a postgresql:// mount"):
        from bastion.stores.postgres import PostgresStore

        return PostgresStore(url, **options)


def _fsspec(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
    with needs(f"a {parts.scheme}:// mount"):
        from bastion.stores.fsspec import FsspecStore

    if parts.scheme in ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss") and not parts.netloc:
        raise ConfigurationError(f"a {parts.scheme}:// URL needs a bucket: {parts.scheme}://bucket")
    single_process = bool(options.pop("single_process", False))  # the store's, not fsspec's
    with needs(f"a {parts.scheme}:// mount"):
        return FsspecStore(url, storage_options=options, single_process=single_process)


SCHEMES: dict[str, Opener] = {
    "memory": _memory,
    "file": _file,
    "sqlite": _sqlite,
    "postgresql": _postgres,
    "postgres": _postgres,
    "s3": _fsspec,
}
"""Schemes Bastion opens itself; any other scheme fsspec knows opens an ``FsspecStore``."""


def plugin_schemes() -> dict[str, EntryPoint]:
    """Scheme -> entry point of every store plug-in installed now (read each call: a
    distribution installed while the process runs is found; Bastion's own schemes are left
    out, since a plug-in cannot replace them)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        scheme = point.name.lower()
        if scheme not in SCHEMES:
            found.setdefault(scheme, point)
    return found


def _plugin(point: EntryPoint) -> Opener:
    """The opener of a store plug-in: loads its factory, calls it with the URL and options,
    and checks that what came back is a store."""
    where = f"the store plug-in {point.name}:// ({point.value})"

    def opener(url: str, parts: SplitResult, base: Path, options: dict[str, Any]) -> Store:
        try:
            factory = point.load()
        except Exception as exc:  # noqa: BLE001 - any failure to import a plug-in is reported
            raise ConfigurationError(
                f"{where} cannot be loaded ({type(exc).__name__}); reinstall it"
            ) from None
        if not callable(factory):
            raise ConfigurationError(f"{where} names no callable; it cannot open a store")
        store = factory(url, **options)
        if not isinstance(store, Store):
            raise ConfigurationError(
                f"{where} returned a {type(store).__name__}, not a bastion Store"
            )
        return store

    return opener


def _local_path(parts: SplitResult, base: Path) -> Path:
    if parts.netloc not in ("", "localhost") or not parts.path or parts.query:
        raise ConfigurationError(
            f"a {parts.scheme}: URL names a path on this machine: "
            f"{parts.scheme}:///absolute/path or {parts.scheme}:relative/path"
        )
    path = Path(unquote(parts.path)).expanduser()
    return path if path.is_absolute() else base / path


local_path = _local_path
"""The folder or file a ``file:`` (or ``sqlite:``) URL names, relative to a base folder."""


def _opener(scheme: str) -> Opener:
    opener = SCHEMES.get(scheme)
    if opener is not None:
        return opener
    plugin = plugin_schemes().get(scheme)
    if plugin is not None:
        return _plugin(plugin)
    try:
        from fsspec.registry import known_implementations  # type: ignore[import-untyped]
    except ImportError:  # the 's3' extra is not installed
        known_implementations = None
    if known_implementations is not None and scheme in known_implementations:
        return _fsspec
    known = ", ".join(f"{name}://" for name in SCHEMES)
    other = (
        "another protocol fsspec knows"
        if known_implementations is not None
        else "another fsspec protocol with the 's3' extra: pip install 'bastion[s3]'"
    )
    raise ConfigurationError(
        f"unknown URL scheme {scheme!r}; use {known}, {other}, "
        f"or install a store plug-in that declares it (entry points {ENTRY_POINT_GROUP})"
    )


def store_from_url(
    url: str, *, relative_to: str | os.PathLike[str] | None = None, **options: Any
) -> Store:
    """The store ``url`` names (see the module doc), built with ``options``."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError("a store URL must be a non-empty string such as memory://")
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        raise ConfigurationError(
            "the store URL is malformed; check its brackets and port"
        ) from None
    scheme = parts.scheme.lower()
    if not scheme or len(scheme) == 1:  # "C:\..." is a Windows path, not a scheme
        raise ConfigurationError(
            "a store URL starts with a scheme: memory://, file:///path, sqlite:///path.db, "
            "postgresql://host/db or s3://bucket/prefix"
        )
    opener = _opener(scheme)
    base = Path(relative_to) if relative_to is not None else Path.cwd()
    try:
        return opener(url.strip(), parts, base, dict(options))
    except TypeError:
        names = ", ".join(sorted(options)) or "(none)"
        raise ConfigurationError(
            f"a {scheme}:// store does not take these options: {names}; check their names"
        ) from None


def mount_from_url(
    prefix: str,
    url: str,
    scope: Scope | str = Scope.READ_WRITE,
    *,
    labels: Labels | None = None,
    description: str = "",
    timeout: float | None = None,
    relative_to: str | os.PathLike[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Mount:
    """A mount of the store ``url`` names at ``prefix`` (see :meth:`Mount.of`). Errors name
    the mount: ``mount /data: unknown URL scheme 'ftp'; ...``."""
    try:
        store = store_from_url(url, relative_to=relative_to, **dict(options or {}))
    except ConfigurationError as exc:
        named = ConfigurationError(f"mount {prefix}: {exc}")
        named.remedy = exc.remedy  # the advice is kept, so is what it names
        raise named from None
    return Mount.of(prefix, store, scope, labels=labels, description=description, timeout=timeout)
