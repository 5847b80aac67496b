"""Who a workspace file names: the ``[principal]`` table, the ``[users]`` table (or a users
file) and ``default_user``, the user the command line acts as when no one is named."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bastion.config.env import expand_env, names, unknown
from bastion.configfile import read_table
from bastion.core.errors import ConfigurationError
from bastion.core.policy import Policy
from bastion.core.principal import Principal, is_plain_name
from bastion.core.schema import list_of_tables, name, show, table

__all__ = ["default_user", "load_users", "principal_table", "users_table"]

_PRINCIPAL_KEYS = frozenset({"id", "tenant", "roles", "clearance", "tags"})
_USER_KEYS = frozenset({"id", "tenant", "roles", "clearance", "tags", "about"})


def principal_table(raw: Any, policy: Policy, env: Mapping[str, str]) -> Principal | None:
    if raw is None:
        return None
    data = table(expand_env(raw, env, "principal"), "principal")
    unknown(data, _PRINCIPAL_KEYS, "principal")
    if "id" not in data:
        raise ConfigurationError('principal: needs an id such as "docs-agent"')
    clearance = name(data.get("clearance", "public"), "principal: clearance")
    if clearance not in policy.classifications.order:
        known = ", ".join(policy.classifications.order)
        raise ConfigurationError(f"principal: unknown clearance {clearance!r}; known: {known}")
    return _plain_principal(
        Principal.of(
            name(data["id"], "principal: id"),
            tenant=name(data.get("tenant", "default"), "principal: tenant"),
            roles=names(data.get("roles", []), "roles", "principal"),
            clearance=clearance,
            tags=names(data.get("tags", []), "tags", "principal"),
        )
    )


def users_table(
    raw: Any, folder: Path, policy: Policy, env: Mapping[str, str]
) -> dict[str, Principal]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        found = load_users(folder / expand_env(raw, env, "users"))
    else:
        found = _user_table(expand_env(raw, env, "users"), "users")
    order = policy.classifications.order
    for user_id, principal in found.items():
        if principal.clearance not in order:
            raise ConfigurationError(
                f"users: {show(user_id)}: unknown clearance {principal.clearance!r}; "
                f"known: {', '.join(order)}"
            )
    return found


def _plain_principal(principal: Principal) -> Principal:
    """``principal`` when its id, tenant, roles and tags are plain text; else the one-line
    error naming the field."""
    fields = (
        ("id", (principal.id,)),
        ("tenant", (principal.tenant,)),
        ("roles", principal.roles),
        ("tags", principal.tags),
    )
    for where, values in fields:
        for value in values:
            if not is_plain_name(value):
                raise ConfigurationError(
                    f"principal {where} holds a control or invisible character; use plain text"
                )
    return principal


def _user_table(data: Any, where: str) -> dict[str, Principal]:
    """Users as a table (``[users.ana]``: user -> settings) or a list of tables with an
    ``id`` (``[[users]]``, the demo's ``users.toml``); ``about`` is a note, kept out."""
    if isinstance(data, list):
        entries: dict[Any, Any] = {}
        for n, entry in enumerate(list_of_tables(data, where)):
            entries[name(entry.get("id"), f"{where}: entry {n + 1}: id")] = entry
    else:
        entries = dict(table(data, where))
    users: dict[str, Principal] = {}
    for user_id, entry in entries.items():
        at = f"{where}: user {show(user_id)}"
        settings = table(entry if entry is not None else {}, at)
        unknown(settings, _USER_KEYS, at)
        lists = [settings.get(key, []) for key in ("roles", "tags")]
        if not all(isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in lists):
            raise ConfigurationError(f"{at}: roles and tags must be lists of strings")
        tenant = name(settings.get("tenant", "default"), f"{at}: tenant")
        clearance = name(settings.get("clearance", "public"), f"{at}: clearance")
        try:
            users[str(user_id)] = _plain_principal(
                Principal.of(
                    str(user_id), tenant=tenant, roles=lists[0], clearance=clearance, tags=lists[1]
                )
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
    return users


def load_users(path: str | os.PathLike[str]) -> dict[str, Principal]:
    """Users from a ``.toml``, ``.yaml`` or ``.yml`` file: user -> ``tenant``, ``roles``,
    ``clearance``, ``tags`` (all optional), at the top level or under ``users``; or a list
    of such tables with an ``id`` under ``users`` (the demo's ``users.toml``)."""
    data: Any = read_table(path, "users file")
    if isinstance(data, Mapping) and isinstance(data.get("users"), Mapping | list):
        data = data["users"]
    try:
        return _user_table(data, "users")
    except ConfigurationError as exc:
        raise ConfigurationError(f"users file {path}: {exc}") from None


def default_user(raw: Any, users: Mapping[str, Principal], env: Mapping[str, str]) -> str | None:
    """``default_user = "NAME"``: a user of ``[users]`` the command line acts as when no
    ``--as`` or ``--token`` names one."""
    if raw is None:
        return None
    user = name(expand_env(raw, env, "default_user"), "default_user")
    if user not in users:
        known = ", ".join(sorted(users)) or "(none: add a [users.NAME] table)"
        raise ConfigurationError(
            f"default_user: {show(user)} is not a user of [users]; known users: {known}"
        )
    return user
