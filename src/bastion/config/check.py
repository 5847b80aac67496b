"""``bastion config check``: every problem of a workspace file in one run, each one line that
names its place, found by opening what the file names (each mount's store, the policy and
users files, the index folder, the audit log's folder, the identity keys' files and secrets and
the identity provider: :mod:`bastion.config.identity_check`), not only by reading it.

:func:`check_file` checks each part on its own, so that a typo in one mount does not hide a
missing folder in another; :meth:`WorkspaceConfig.from_file` (which stops at the first
error and builds nothing) is what every other command uses.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bastion.config.identity_check import check_identity
from bastion.configfile import read_table
from bastion.core.errors import BastionError, ConfigurationError
from bastion.core.policy import Policy

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig

__all__ = ["CheckReport", "check_file"]


@dataclass
class CheckReport:
    """What :func:`check_file` found: the checked file (``None`` when any part is wrong) and
    every problem, one line each, naming its place."""

    config: WorkspaceConfig | None = None
    problems: list[str] = field(default_factory=list)


def check_file(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    other_tables: frozenset[str] = frozenset(),
    load: Callable[[Path], WorkspaceConfig] | None = None,
) -> CheckReport:
    """Check the workspace file at ``path`` part by part and open what it names.
    ``other_tables``: top-level tables another reader checks (``[server]``, ``[identity]``:
    ``load`` reads the file with them, once every part here passed)."""
    from bastion.config import (
        TOP_KEYS,
        WorkspaceConfig,
        knowledge_table,
        mount_table,
        policy_table,
    )
    from bastion.config.env import unknown
    from bastion.config.people import default_user, principal_table, users_table

    file = Path(path)
    report = CheckReport()
    environ = os.environ if env is None else env
    base = file.resolve().parent
    try:
        data = read_table(file, "workspace file")
    except ConfigurationError as exc:
        report.problems.append(str(exc))
        return report

    def attempt(place: str, check: Callable[[], Any]) -> Any:
        try:
            return check()
        except OSError as exc:
            report.problems.append(f"{place}: cannot be reached ({exc.strerror or exc})")
        except (BastionError, ValueError) as exc:
            text = str(exc)
            named = text.startswith(place.split(" ", 1)[0])
            report.problems.append(text if named else f"{place}: {text}")
        return None

    attempt("workspace file", lambda: unknown(data, TOP_KEYS | other_tables, "workspace file"))
    policy = attempt("policy", lambda: policy_table(data.get("policy"), base, environ))
    raw_mounts = data.get("mounts")
    if not isinstance(raw_mounts, list) or not raw_mounts:
        report.problems.append(
            "mounts: needs at least one [[mounts]] entry with a prefix and a url"
        )
        raw_mounts = []
    rules = policy or Policy()
    for n, raw in enumerate(raw_mounts):
        mount = attempt(
            f"mount {n + 1}", functools.partial(mount_table, raw, n + 1, rules, environ)
        )
        if mount is not None:
            attempt(f"mount {mount.prefix}", functools.partial(_open_mount, mount, base))
    knowledge = attempt("knowledge", lambda: knowledge_table(data.get("knowledge"), base, environ))
    if knowledge is not None:
        attempt("knowledge", lambda: _writable(knowledge.folder, "the index folder"))
    attempt("principal", lambda: principal_table(data.get("principal"), rules, environ))
    users = attempt("users", lambda: users_table(data.get("users"), base, rules, environ))
    attempt("default_user", lambda: default_user(data.get("default_user"), users or {}, environ))
    if "identity" in other_tables and "identity" in data:
        check_identity(data["identity"], base, environ, report.problems.append)
    if isinstance(audit := data.get("audit"), str):
        log = base / Path(audit).expanduser()
        attempt("audit", lambda: _writable(log.parent, "the audit log's folder"))
    if not report.problems:
        reader = load or (lambda f: WorkspaceConfig.from_file(f, env=env))
        report.config = attempt(str(file), lambda: reader(file))
    return report


def _open_mount(mount: Any, base: Path) -> None:
    """Open the mount's store and reach it once (``check_mounts``); close it again."""
    from bastion.stores.mount_checks import check_mounts, close_mounts

    opened = mount.open(base)

    async def reach() -> None:
        try:
            await check_mounts([opened])
        finally:
            await close_mounts([opened])

    asyncio.run(reach())


def _writable(folder: Path, what: str) -> None:
    """``folder`` exists and may be written, or can be made (its nearest existing parent
    may be written)."""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigurationError(f"{what} {folder} is under {probe}, which is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{what} {folder} cannot be written (check its permissions)")
