"""A running server's configuration replaced by a newly read workspace file (see
:mod:`bastion.server.reload`): the same stores and index, the new policy, mount scopes and
labels, identity and revocations."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.server.auth import Authenticator

if TYPE_CHECKING:
    from bastion.server.file import ServerFile
    from bastion.workspace import Workspace

__all__ = ["reconfigured"]


def reconfigured(
    running: Workspace, auth: Authenticator, before: ServerFile | None, server: ServerFile
) -> tuple[Workspace, Authenticator, list[str]]:
    """The workspace and authenticator ``server`` asks for, built over the ``running``
    workspace and ``auth`` (read from ``before``); raises (a
    :class:`~bastion.core.errors.ConfigurationError`) before anything is swapped."""
    from bastion.governance.identity import JwtVerifier

    notes: list[str] = []
    old_urls = (
        {_key(m.prefix): (m.url, dict(m.options)) for m in before.workspace.mounts}
        if before is not None
        else {}
    )
    live = {str(m.prefix): m for m in running.mounts}
    mounts: list[Mount] = []
    waiting: list[str] = []
    for wanted in server.workspace.mounts:
        prefix = _key(wanted.prefix)
        current = live.get(prefix)
        if current is None:
            waiting.append(f"new mount {prefix}")
            continue
        if prefix in old_urls and old_urls[prefix] != (wanted.url, dict(wanted.options)):
            waiting.append(f"the store of {prefix}")
        mounts.append(
            dataclasses.replace(
                current,
                scope=wanted.scope,
                labels=wanted.labels,
                description=wanted.description,
            )
        )
    removed = sorted(set(live) - {_key(m.prefix) for m in server.workspace.mounts})
    if removed:
        notes.append(f"removed {', '.join(removed)}")
    if before is not None:
        if before.workspace.knowledge != server.workspace.knowledge:
            waiting.append("[knowledge]")
        if before.settings != server.settings:
            waiting.append("[server]")
    if waiting:
        notes.append(f"{', '.join(waiting)} wait for a restart")
    policy = server.workspace.policy
    verifier = JwtVerifier(server.identity, policy=policy) if server.identity else None
    demo = auth.demo.for_policy(policy) if auth.demo is not None else None
    sessions = None
    if auth.sessions is not None:
        sessions = auth.sessions.for_config(server.workspace.users, policy)
    fresh = Authenticator(verifier, demo, auth.revocations, sessions)
    workspace = running.reconfigured(policy=policy, mounts=mounts)
    return workspace, fresh, notes


def _key(prefix: str | VPath) -> str:
    return str(prefix if isinstance(prefix, VPath) else VPath.parse(prefix))
