"""The demo corpus: documents of two fictional companies, labelled in their front matter, and
the people who ask about them.

Larkspur Labs (tenant ``larkspur``, warehouse robots) and Tidewater Freight (tenant
``tidewater``, container shipping) each keep public, internal, confidential and restricted
documents from HR, finance, engineering, legal and security. Every document says in its front
matter which tenant owns it, its classification and the roles that may read it; nothing is
inferred from a file name. ``users.toml`` holds the role hierarchy and the demo users.

The files are package data, read with :mod:`importlib.resources`, so the corpus works from a
wheel as well as from a checkout. :func:`write_corpus` lays it out in a folder, one sub-folder
per tenant (the tenant named in each document's front matter), and :func:`corpus_mounts`
mounts each tenant's folder read-only with the tenant as the mount's label: a user of one
tenant does not see the other tenant's mount at all, and the workspace applies each file's
front matter labels on every read, listing, grep and search.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.core.models import DEFAULT_CLASSIFICATIONS, Labels, Scope
from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.core.principal import Principal, RoleGraph

__all__ = [
    "CorpusDocument",
    "DemoUser",
    "corpus_mounts",
    "demo_policy",
    "documents",
    "role_hierarchy",
    "user",
    "users",
    "write_corpus",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class CorpusDocument:
    """One document of the corpus, as its front matter describes it."""

    path: str
    """Workspace path: ``/<tenant>/<folder>/<name>.md``."""
    tenant: str
    title: str
    department: str
    classification: str
    roles: frozenset[str]
    """Roles that may read it; empty means every role of the tenant."""
    text: str
    """The whole file, front matter included."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DemoUser:
    """A person of the story; :attr:`principal` is who they act as."""

    id: str
    about: str
    """What they do, in a few words."""
    tenant: str
    roles: frozenset[str]
    """Roles granted directly; the policy's role hierarchy adds the inherited ones."""
    clearance: str

    @property
    def principal(self) -> Principal:
        return Principal.of(self.id, tenant=self.tenant, roles=self.roles, clearance=self.clearance)


def _root() -> Traversable:
    return files(__name__)


def _markdown(folder: Traversable, where: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir() and not entry.name.startswith(("_", ".")):
            found += _markdown(entry, (*where, entry.name))
        elif entry.is_file() and entry.name.endswith(".md"):
            found.append(((*where, entry.name), entry.read_text(encoding="utf-8")))
    return found


def _document(parts: tuple[str, ...], text: str) -> CorpusDocument:
    from bastion.labels.frontmatter import split_front_matter

    where = "/".join(parts)
    found = split_front_matter(text, where)
    meta = found.metadata if found is not None else {}
    tenant = meta.get("tenant")
    if not isinstance(tenant, str) or tenant != parts[0]:
        # The folder only keeps the files tidy; the front matter is what places a document.
        raise ConfigurationError(
            f"demo corpus {where}: front matter tenant {tenant!r} must name its folder {parts[0]!r}"
        )
    classification = meta.get("classification")
    if classification not in DEFAULT_CLASSIFICATIONS:
        raise ConfigurationError(
            f"demo corpus {where}: classification {classification!r} is not one of "
            f"{', '.join(DEFAULT_CLASSIFICATIONS)}"
        )
    roles = meta.get("roles") or []
    if isinstance(roles, str):
        roles = roles.split(",")
    return CorpusDocument(
        path="/" + where,
        tenant=tenant,
        title=str(meta.get("title", parts[-1])),
        department=str(meta.get("department", "")),
        classification=str(classification),
        roles=frozenset(str(r).strip() for r in roles if str(r).strip()),
        text=text,
    )


@cache
def documents() -> tuple[CorpusDocument, ...]:
    """Every document of the corpus, by path."""
    return tuple(_document(parts, text) for parts, text in _markdown(_root(), ()))


@cache
def _users_file() -> dict[str, Any]:
    return tomllib.loads(_root().joinpath("users.toml").read_text(encoding="utf-8"))


def role_hierarchy() -> dict[str, tuple[str, ...]]:
    """Role -> the roles it inherits (``executive`` inherits every department's role)."""
    return {role: tuple(parents) for role, parents in _users_file()["roles"].items()}


def users() -> tuple[DemoUser, ...]:
    """The demo users, in the order the story introduces them."""
    return tuple(
        DemoUser(
            id=raw["id"],
            about=raw["about"],
            tenant=raw["tenant"],
            roles=frozenset(raw["roles"]),
            clearance=raw["clearance"],
        )
        for raw in _users_file()["users"]
    )


def user(user_id: str) -> DemoUser:
    """The demo user with this id."""
    for found in users():
        if found.id == user_id:
            return found
    known = ", ".join(u.id for u in users())
    raise ConfigurationError(f"no demo user {user_id!r}; known: {known}")


def demo_policy() -> Policy:
    """Every action allowed on every path, the demo's role hierarchy, the default
    classifications: the labels alone decide who reads what (the mounts are read-only)."""
    return Policy.allow_all(roles=RoleGraph.from_mapping(role_hierarchy()))


def write_corpus(folder: str | Path) -> list[Path]:
    """Write the corpus under ``folder`` (``folder/<tenant>/...``); the files written."""
    root = Path(folder)
    written: list[Path] = []
    for doc in documents():
        target = root.joinpath(*doc.path.strip("/").split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(doc.text, encoding="utf-8")
        written.append(target)
    return written


def corpus_mounts(folder: str | Path) -> list[Mount]:
    """One read-only local-disk mount per tenant (``/larkspur``, ``/tidewater``) over a folder
    that :func:`write_corpus` filled; the mount's labels name its tenant."""
    from bastion.stores.local import LocalStore

    root = Path(folder)
    tenants = sorted({doc.tenant for doc in documents()})
    return [
        Mount.of(
            f"/{tenant}",
            LocalStore(root / tenant),
            Scope.READ_ONLY,
            labels=Labels(tenant=tenant),
            description=f"documents of tenant {tenant}",
        )
        for tenant in tenants
    ]
