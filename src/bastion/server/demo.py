"""The demo server: the demo corpus (two companies, read-only), an ``/uploads`` folder, a
keyword index, and the demo login on. What ``bastion serve --demo`` runs, and what the
browser tests drive.

The policy lets every user do everything but the operator tasks; the ``security`` role (and
``executive``, which inherits it) may also read the audit log and repair the index. The
documents' labels still decide who reads what.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette

from bastion.core.models import Action, Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.policy import Policy, Rule
from bastion.core.principal import RoleGraph
from bastion.server.app import create_app
from bastion.server.settings import ServerSettings

__all__ = ["demo_app", "demo_server_policy"]

_OPERATOR = (Action.AUDIT, Action.REINDEX, Action.LABEL, Action.EXECUTE)


def demo_server_policy() -> Policy:
    from bastion.demo.corpus import role_hierarchy

    everyday = [a for a in Action if a not in _OPERATOR]
    return Policy(
        rules=(
            Rule.allow(list(everyday), "/**", description="every user: the labels decide"),
            Rule.allow(
                [Action.AUDIT, Action.REINDEX], "/**", roles={"security"}, description="operators"
            ),
        ),
        roles=RoleGraph.from_mapping(role_hierarchy()),
    )


def demo_app(folder: str | Path, *, settings: ServerSettings | None = None) -> Starlette:
    """Lay the corpus out under ``folder`` and serve it (demo login on)."""
    from bastion.demo.corpus import corpus_mounts, users, write_corpus
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex
    from bastion.stores.local import LocalStore
    from bastion.workspace import Workspace

    root = Path(folder)
    write_corpus(root / "corpus")
    (root / "uploads").mkdir(parents=True, exist_ok=True)
    mounts = [
        *corpus_mounts(root / "corpus"),
        Mount.of(
            "/uploads",
            LocalStore(root / "uploads"),
            Scope.READ_WRITE,
            labels=Labels(classification="internal"),
            description="uploads, internal to every tenant",
        ),
    ]
    ws = Workspace(mounts, policy=demo_server_policy(), knowledge=Knowledge(MemoryIndex()))
    ws.sync().rebuild_index()
    people = [(u.principal, u.about) for u in users()]
    chosen = settings or ServerSettings(demo_login=True)
    if not chosen.demo_login:
        from dataclasses import replace

        chosen = replace(chosen, demo_login=True)
    return create_app(ws, settings=chosen, demo_users=people)
