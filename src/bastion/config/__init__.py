"""The workspace file (``bastion.toml``): mounts by URL, a policy, an optional knowledge index
and an optional principal. It is the one configuration schema of every entry point:
``load_workspace``, ``bastion mcp --config``, ``bastion index/reindex/search/ask --config``;
folders named on a command line become entries of it too (:func:`folder_config`).

``load_workspace("bastion.toml")`` reads the file, builds every store its mounts name
(``bastion.stores.registry``), loads the policy and opens the knowledge index, which is
refused if it was built from other mounts or another embedder (``bastion.knowledge.origin``)
and brought up to date with the mounts (``[knowledge] index_on_open``); the shape of
the file is in ``docs/configuration.md`` (:func:`load_policy` reads a policy file alone).
Loading is separate from building:
:meth:`WorkspaceConfig.from_file` checks the whole file first (unknown keys at every level,
a string where a list belongs, scopes, labels, timeouts, the principal, the policy) and builds
nothing, so a typo never leaves half a workspace open. Every error is one line that names the
file.

Secrets stay out of the file: any string may name environment variables, ``${PG_PASSWORD}``
or ``${NAME:-default}`` (``$$`` is a plain ``$``). A missing variable is an error that names
the variable, never a value. Errors are one line and name the mount; they never quote a URL
or an option (either may hold a password once expanded).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bastion.config.env import expand_env, names, unknown
from bastion.config.people import default_user, load_users, principal_table, users_table
from bastion.configfile import read_table
from bastion.core.errors import BastionError, ConfigurationError, InvalidPathError
from bastion.core.models import Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.core.principal import Principal
from bastion.core.schema import name, show, table, text
from bastion.stores.mount_checks import check_mounts, close_mounts, close_now
from bastion.stores.overlay_layers import default_layer_url, overlaid
from bastion.stores.registry import mount_from_url

if TYPE_CHECKING:
    from bastion.core.audit import AuditSink
    from bastion.knowledge.engine import Knowledge
    from bastion.workspace.workspace import Workspace

__all__ = [
    "KnowledgeConfig",
    "MountConfig",
    "WorkspaceConfig",
    "check_mounts",
    "close_mounts",
    "expand_env",
    "folder_config",
    "load_policy",
    "load_users",
    "load_workspace",
]

IndexProgress = Callable[[int, int, str], None]
"""``progress(done, total, path)``, called after each file an index run reads."""

_log = logging.getLogger(__name__)
TOP_KEYS = frozenset(
    {"mounts", "policy", "knowledge", "principal", "users", "default_user", "audit", "journal"}
)
_MOUNT_KEYS = frozenset(
    {"prefix", "url", "scope", "labels", "description", "timeout", "options", "overlay"}
)
_LABEL_KEYS = frozenset({"tenant", "classification", "roles", "tags"})
_KNOWLEDGE_KEYS = frozenset({"folder", "embedder", "variant", "index_on_open", "index"})
_EMBEDDERS = ("local", "none")


def _labels(raw: Any, policy: Policy, where: str) -> Labels:
    data = table(raw, f"{where}: labels")
    unknown(data, _LABEL_KEYS, f"{where}: labels")
    tenant = data.get("tenant")
    if tenant is not None:
        name(tenant, f"{where}: labels.tenant")
    classification = name(data.get("classification", "public"), f"{where}: labels.classification")
    if classification not in policy.classifications.order:
        known = ", ".join(policy.classifications.order)
        raise ConfigurationError(
            f"{where}: unknown classification {classification!r}; known: {known}"
        )
    return Labels(
        tenant=tenant,
        classification=classification,
        roles=names(data.get("roles", []), "labels.roles", where),
        tags=names(data.get("tags", []), "labels.tags", where),
    )


def _timeout(raw: Any, where: str) -> float | None:
    if raw is None:
        return None
    if raw in ("none", "never"):
        return math.inf
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not raw > 0:
        raise ConfigurationError(
            f'{where}: timeout must be a positive number of seconds (or "never")'
        )
    return float(raw)


@dataclass(frozen=True)
class MountConfig:
    """One ``[[mounts]]`` entry, checked but not opened."""

    prefix: str
    url: str = field(repr=False)
    """The store's URL, variables expanded (it may hold a password: never shown)."""
    scope: Scope = Scope.READ_WRITE
    labels: Labels = field(default_factory=Labels)
    description: str = ""
    timeout: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """Options of the store (credentials, ``endpoint_url``, ``namespace``...): never shown."""
    overlay: str | None = field(default=None, repr=False)
    """The URL of the store that keeps this mount's overlay layers (docs/changes.md):
    writes land there, a layer per thread, and the store ``url`` names is left unchanged
    until a person applies them. ``None``: no overlay."""

    def open(self, relative_to: str | os.PathLike[str] | None = None) -> Mount:
        """Build the store and mount it. A remedy the store names as its argument
        (``pass create=True``) is said in the file's words (``options = { create = true }``)."""
        try:
            mount = mount_from_url(
                self.prefix,
                self.url,
                self.scope,
                labels=self.labels,
                description=self.description,
                timeout=self.timeout,
                relative_to=relative_to,
                options=self.options,
            )
            return mount if self.overlay is None else overlaid(mount, self.overlay, relative_to)
        except BastionError as exc:
            if exc.remedy is None or exc.remedy[0] not in _MOUNT_OPTIONS:
                raise
            key, value = exc.remedy
            said = f"set options = {{ {key} = {str(value).lower()} }} on this mount"
            raise type(exc)(str(exc).replace(f"pass {key}={value!r}", said)) from exc


_MOUNT_OPTIONS = frozenset({"create"})
"""Store arguments a ``[[mounts]]`` entry sets in its ``options`` table."""


@dataclass(frozen=True)
class KnowledgeConfig:
    """The ``[knowledge]`` table: where the search index lives and which embedder fills it."""

    folder: Path
    embedder: str = "local"
    """``"local"`` (the packaged model: BM25, vector and hybrid search) or ``"none"``
    (BM25 only)."""
    index_on_open: bool = True
    """Bring the index in step with the mounts whenever the workspace is built (only what
    changed since the last run: :meth:`Workspace.reindex`)."""
    variant: str | None = None
    """The local model's number format (``"int8"``, ``"bf16"``, ...; ``None``: chosen for the
    machine, :func:`bastion.knowledge.embedders.local.cpu_default`). Variants of the model
    share one vector space: an index built with one opens with another."""
    index: str = "auto"
    """``"sqlite"`` (the core: one SQLite file), ``"lancedb"`` (the extra) or ``"auto"``:
    what the folder holds, else LanceDB where installed, else SQLite."""

    def open(self, mounts: Iterable[MountConfig], *, base: Path) -> Knowledge:
        """The index, refused when it was built from other mounts or another embedder than
        ``mounts`` and this table's (:mod:`bastion.knowledge.origin`), recorded the first
        time; relative mount paths start at ``base``."""
        from bastion.core.extras import needs
        from bastion.knowledge.engine import Knowledge
        from bastion.knowledge.origin import IndexOrigin, check_origin, record_origin, source_key

        model = None
        if self.embedder == "local":
            with needs("the local embedder (embedder = 'local')"):
                from bastion.knowledge.embedders.local import LocalEmbedder

                model = LocalEmbedder(variant=self.variant)
        sources = [
            (m.prefix, source_key(m.url, m.options, relative_to=base, index_folder=self.folder))
            for m in mounts
        ]
        origin = IndexOrigin.of(
            sources,
            embedder=model.name if model is not None else None,
            dim=model.dim if model is not None else None,
        )
        new = check_origin(self.folder, origin)
        knowledge = Knowledge.open(self.folder, embedder=model, index=self.index)
        if new is not None:  # once the index opened: a record never names an index it refused
            try:
                record_origin(self.folder, new)
            except BaseException:
                knowledge.close()
                raise
        return knowledge


@dataclass(frozen=True)
class WorkspaceConfig:
    """A checked workspace file. :meth:`build` opens its stores and makes the workspace."""

    mounts: tuple[MountConfig, ...]
    policy: Policy
    knowledge: KnowledgeConfig | None = None
    base: Path = field(default_factory=Path.cwd)
    """The folder relative paths are taken from (the file's own folder)."""
    principal: Principal | None = None
    """The ``[principal]`` table: who the workspace acts for when the caller names no one
    (``bastion mcp`` serves its tools for this principal)."""
    users: Mapping[str, Principal] = field(default_factory=dict)
    """The ``[users]`` table (or ``users = "users.toml"``): who ``--as USER`` may name."""
    audit: Path | None = None
    """``audit = "FILE"``: the JSON-lines audit log (``bastion audit`` reads it back)."""
    default_user: str | None = None
    """``default_user = "NAME"``: the user of ``[users]`` the command line acts as when no
    ``--as`` or ``--token`` names one (``bastion init`` writes one)."""
    journal: Mapping[str, Any] | None = None
    """``[journal]``: the change journal (docs/changes.md); checked when it is opened."""

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
    ) -> WorkspaceConfig:
        """Read and check a workspace file: ``.toml``, or ``.yaml`` / ``.yml`` holding the
        same tables. Every error names the file."""
        file = Path(path)
        return cls._checked(read_table(file, "workspace file"), file, env)

    @classmethod
    def from_toml(
        cls, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
    ) -> WorkspaceConfig:
        """Read and check a ``bastion.toml``; ``env`` defaults to ``os.environ``. Every error
        names the file. The file is read as TOML whatever its name."""
        file = Path(path)
        return cls._checked(read_table(file, "workspace file", fmt="TOML"), file, env)

    @classmethod
    def _checked(cls, data: object, file: Path, env: Mapping[str, str] | None) -> WorkspaceConfig:
        try:
            return cls.from_dict(table(data, "workspace file"), base=file.resolve().parent, env=env)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{file}: {exc}") from None

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        base: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> WorkspaceConfig:
        """Check plain data of the shape of a workspace file."""
        environ = os.environ if env is None else env
        folder = Path(base) if base is not None else Path.cwd()
        unknown(data, TOP_KEYS, "workspace file")
        policy = policy_table(data.get("policy"), folder, environ)
        raw_mounts = data.get("mounts")
        if not isinstance(raw_mounts, list) or not raw_mounts:
            raise ConfigurationError(
                "workspace file: needs at least one [[mounts]] entry with a prefix and a url"
            )
        mounts = tuple(mount_table(raw, n + 1, policy, environ) for n, raw in enumerate(raw_mounts))
        seen: set[str] = set()
        for mount in mounts:
            if mount.prefix in seen:
                raise ConfigurationError(f"mount {show(mount.prefix)}: mounted twice")
            seen.add(mount.prefix)
        knowledge = knowledge_table(data.get("knowledge"), folder, environ)
        principal = principal_table(data.get("principal"), policy, environ)
        users = users_table(data.get("users"), folder, policy, environ)
        audit = data.get("audit")
        if audit is not None:
            audit = folder / Path(name(expand_env(audit, environ, "audit"), "audit")).expanduser()
        default = default_user(data.get("default_user"), users, environ)
        journal = data.get("journal")
        return cls(mounts, policy, knowledge, folder, principal, users, audit, default, journal)

    def open_mounts(self, *, tolerant: bool = False) -> list[Mount]:
        """Build every store and mount it; on an error, close those already opened.
        ``tolerant``: a store that cannot be opened (a missing folder, an unreachable server,
        a missing extra) is mounted as one that answers every call with that error
        (:class:`~bastion.config.unavailable.UnavailableStore`), and the others work."""
        opened: list[Mount] = []
        try:
            for mount in self.mounts:
                try:
                    opened.append(mount.open(self.base))
                except (BastionError, OSError) as exc:
                    if not tolerant:
                        raise
                    opened.append(_unavailable(mount, exc))
        except BaseException:
            close_now(opened)
            raise
        return opened

    def build(
        self,
        *,
        principal: Principal | None = None,
        audit: AuditSink | None = None,
        index_on_open: bool | None = None,
        progress: IndexProgress | None = None,
        owner: bool = False,
    ) -> Workspace:
        """The workspace this file describes, acting for ``principal`` (default: the file's
        ``[principal]``, else ``local``). ``owner=True`` gives the owner's view instead: the
        holder of the file, who acts for no principal, reads the whole audit log and hears of
        every file an index run handled. With an index, what changed in the mounts since the
        last run is indexed first, as the owner (``index_on_open``: default the file's
        ``[knowledge] index_on_open``; ``progress(done, total, path)`` after each file)."""
        sink = audit or self._audit_sink()
        return self._build(principal, sink, index_on_open, progress, owner=owner)[0]

    def _audit_sink(self) -> AuditSink | None:
        """The file's audit log (``audit = "FILE"``), opened for appending; else ``None``."""
        if self.audit is None:
            return None
        from bastion.core.audit_sinks import JsonLinesAuditSink

        return JsonLinesAuditSink(self.audit)

    @contextlib.contextmanager
    def opened(
        self,
        *,
        principal: Principal | None = None,
        audit: AuditSink | None = None,
        index_on_open: bool | None = None,
        progress: IndexProgress | None = None,
        owner: bool = False,
    ) -> Iterator[Workspace]:
        """:meth:`build`, and on leaving, close the stores and the index it opened (call it
        outside an event loop, as a command line does)."""
        own = self._audit_sink() if audit is None else None
        ws, mounts, knowledge = self._build(
            principal, audit or own, index_on_open, progress, owner=owner
        )
        try:
            yield ws
        finally:
            try:
                if knowledge is not None:
                    knowledge.close()
            finally:
                close_now(mounts)
                if own is not None:
                    own.close()

    def open_knowledge(self) -> Knowledge | None:
        """The ``[knowledge]`` index (``None`` without one), checked against the mounts and
        the embedder it was built from (:meth:`KnowledgeConfig.open`)."""
        if self.knowledge is None:
            return None
        return self.knowledge.open(self.mounts, base=self.base)

    def _build(
        self,
        principal: Principal | None,
        audit: AuditSink | None,
        index_on_open: bool | None = None,
        progress: IndexProgress | None = None,
        *,
        owner: bool = False,
    ) -> tuple[Workspace, list[Mount], Knowledge | None]:
        from bastion.config.kept_apart import journal_file, refuse_kept_in_mounts
        from bastion.workspace.journal.settings import open_journal
        from bastion.workspace.workspace import Workspace

        mounts = self.open_mounts()
        knowledge: Knowledge | None = None
        try:
            refuse_kept_in_mounts(mounts, self.policy, journal_file(self.journal, self.base))
            knowledge = self.open_knowledge()
            # Built for its owner, who may index every file; then the view of the principal.
            j = open_journal(self.journal, self.base)
            ws = Workspace(mounts, policy=self.policy, audit=audit, knowledge=knowledge, journal=j)
            if self.knowledge is not None and (
                self.knowledge.index_on_open if index_on_open is None else index_on_open
            ):
                _index_on_open(ws, self.knowledge.folder, progress)
            who = None if owner else principal or self.principal
            if who is not None:
                ws = ws.with_principal(who)
        except BaseException:
            try:
                if knowledge is not None:
                    knowledge.close()
            finally:
                close_now(mounts)
            raise
        return ws, mounts, knowledge


def _unavailable(mount: MountConfig, exc: BaseException) -> Mount:
    """``mount`` on a store that answers every call with ``exc`` as one line."""
    from bastion.config.unavailable import UnavailableStore

    reason = (exc.strerror or type(exc).__name__) if isinstance(exc, OSError) else str(exc)
    if not reason.startswith("mount "):
        reason = f"mount {mount.prefix}: {reason}"
    _log.warning("%s; the other mounts work", reason)
    return Mount.of(
        mount.prefix,
        UnavailableStore(reason),
        mount.scope,
        labels=mount.labels,
        description=mount.description,
    )


def _index_on_open(ws: Workspace, folder: Path, progress: IndexProgress | None) -> None:
    """Index what changed in the mounts since the last run (new, changed and deleted files),
    as the owner; one log line says what was done."""
    from bastion.workspace.blocking import run_blocking

    summary = run_blocking(ws.reindex(progress=progress))
    _log.info(
        "index in %s brought up to date on open: %s",
        folder,
        summary.format(),
    )


def policy_table(raw: Any, folder: Path, env: Mapping[str, str]) -> Policy:
    if isinstance(raw, str):
        return load_policy(folder / expand_env(raw, env, "policy"))
    if isinstance(raw, dict):
        return Policy.from_dict(expand_env(raw, env, "policy"))
    raise ConfigurationError(
        'workspace file: needs a policy: policy = "policy.toml" (a file next to it) '
        "or a [policy] table (see docs/policy.md)"
    )


def mount_table(raw: Any, number: int, policy: Policy, env: Mapping[str, str]) -> MountConfig:
    data = table(raw, f"mount {number}")
    prefix = data.get("prefix")
    if not isinstance(prefix, str) or not prefix:
        raise ConfigurationError(f'mount {number}: needs a prefix such as "/docs"')
    where = f"mount {show(prefix)}"
    unknown(data, _MOUNT_KEYS, where)
    data = expand_env(data, env, where)
    try:  # one spelling per mount, so that "/a" and "/a/" are found to be the same
        prefix = str(VPath.parse(data["prefix"]))
    except InvalidPathError as exc:
        raise ConfigurationError(f"{where}: the prefix is not a path: {exc}") from None
    url = data.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(f'{where}: needs a url such as "memory://"')
    try:
        scope = Scope(data.get("scope", Scope.READ_WRITE))
    except ValueError:
        known = ", ".join(s.value for s in Scope)
        raise ConfigurationError(f"{where}: unknown scope; use {known}") from None
    description = text(data.get("description", ""), f"{where}: description")
    return MountConfig(
        prefix=prefix,
        url=url.strip(),
        scope=scope,
        labels=_labels(data.get("labels", {}), policy, where),
        description=description,
        timeout=_timeout(data.get("timeout"), where),
        options=_options(data.get("options", {}), where),
        overlay=_overlay(data.get("overlay", False), prefix, where),
    )


def _overlay(raw: Any, prefix: str, where: str) -> str | None:
    """A mount's ``overlay``: ``true`` (layers under ``.bastion/overlays``), a store URL, or
    ``false``."""
    if raw is True:
        return default_layer_url(prefix)
    if raw is False:
        return None
    if isinstance(raw, str) and raw.strip():
        return raw.strip()
    raise ConfigurationError(
        f'{where}: overlay is true, false or the URL of a store for its layers ("file:layers")'
    )


def _options(raw: Any, where: str) -> dict[str, Any]:
    """The store's options; one set to the empty string is left out, so that
    ``"${VAR:-}"`` makes an option optional (``endpoint_url`` for AWS itself)."""
    return {k: v for k, v in table(raw, f"{where}: options").items() if v != ""}


def knowledge_table(raw: Any, folder: Path, env: Mapping[str, str]) -> KnowledgeConfig | None:
    if raw is None:
        return None
    data = table(expand_env(raw, env, "knowledge"), "knowledge")
    unknown(data, _KNOWLEDGE_KEYS, "knowledge")
    where = data.get("folder")
    if not isinstance(where, str) or not where:
        raise ConfigurationError("knowledge: needs a folder for the index")
    embedder = data.get("embedder", "local")
    if embedder not in _EMBEDDERS:
        raise ConfigurationError(f"knowledge: embedder must be one of {', '.join(_EMBEDDERS)}")
    on_open = data.get("index_on_open", True)
    if not isinstance(on_open, bool):
        raise ConfigurationError("knowledge: index_on_open must be true or false")
    from bastion.knowledge.embedders.base import NUMBER_FORMATS

    variant = data.get("variant")
    if variant is not None and (embedder != "local" or variant not in NUMBER_FORMATS):
        raise ConfigurationError(
            f"knowledge: variant must be one of {', '.join(NUMBER_FORMATS)}, "
            "with embedder = 'local'"
        )
    index = data.get("index", "auto")
    if index not in ("auto", "sqlite", "lancedb"):
        raise ConfigurationError("knowledge: index must be one of auto, sqlite, lancedb")
    path = Path(where).expanduser()
    return KnowledgeConfig(
        path if path.is_absolute() else folder / path, embedder, on_open, variant, index
    )


def folder_config(
    mounts: Iterable[tuple[str, str | os.PathLike[str], str]],
    *,
    policy_file: str | os.PathLike[str] | None = None,
    knowledge: KnowledgeConfig | None = None,
) -> WorkspaceConfig:
    """A workspace named on a command line, checked by the workspace-file schema: each
    ``(prefix, folder, scope)`` becomes a ``[[mounts]]`` entry (the folder ``"memory"`` is a
    scratch area). The policy is ``policy_file``, or, without one, the owner's: everything
    the scopes allow but ``execute``, ``.git`` and ``.bastion`` blocked (the person running the
    command may read their own folders; running commands is granted only by a policy file)."""
    from bastion.core.models import Action

    owner_actions = [a.value for a in Action if a is not Action.EXECUTE]
    entries = [
        {
            "prefix": prefix,
            "url": "memory://" if folder == "memory" else Path(folder).resolve().as_uri(),
            "scope": scope,
        }
        for prefix, folder, scope in mounts
    ]
    policy: Any = {
        # every action but running commands: an agent gets a shell only where a policy says so
        "rules": [{"effect": "allow", "actions": owner_actions, "paths": ["/**"]}],
        "limits": {"blocked_segments": [".git", ".bastion"]},
    }
    if policy_file is not None:  # a file name, with any $ kept as it is
        policy = os.fspath(Path(policy_file).resolve()).replace("$", "$$")
    settings = WorkspaceConfig.from_dict({"mounts": entries, "policy": policy}, env={})
    return settings if knowledge is None else dataclasses.replace(settings, knowledge=knowledge)


def load_workspace(
    path: str | os.PathLike[str],
    *,
    principal: Principal | None = None,
    audit: AuditSink | None = None,
    env: Mapping[str, str] | None = None,
) -> Workspace:
    """Read the workspace file at ``path`` (``bastion.toml``, or the same tables in YAML) and
    build its workspace, acting for ``principal`` or the file's own (see the module doc)."""
    return WorkspaceConfig.from_file(path, env=env).build(principal=principal, audit=audit)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Load a policy from ``.toml``, ``.yaml`` or ``.yml`` (see ``docs/policy.md``)."""
    data = read_table(path, "policy file")
    try:
        return Policy.from_dict(data)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{Path(path)}: {exc}") from None
