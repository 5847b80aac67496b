"""Who is asking: principals, the role hierarchy, and label checks."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bastion.core.errors import ConfigurationError
from bastion.core.models import DEFAULT_CLASSIFICATIONS, Labels
from bastion.core.schema import list_of_names

__all__ = ["Classifications", "Principal", "RoleGraph", "is_plain_name"]


@dataclass(frozen=True, slots=True)
class Principal:
    """The identity a request acts for."""

    id: str
    """Subject id (user, service or agent)."""
    tenant: str = "default"
    roles: frozenset[str] = frozenset()
    """Directly granted roles; inherited ones come from the policy's :class:`RoleGraph`."""
    clearance: str = "public"
    """Highest classification this principal may read."""
    tags: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        id: str,
        *,
        tenant: str = "default",
        roles: Iterable[str] = (),
        clearance: str = "public",
        tags: Iterable[str] = (),
    ) -> Principal:
        """Build a principal from any iterables of roles and tags (a lone string is refused:
        it would be read as its letters)."""
        return cls(
            id,
            tenant,
            frozenset(list_of_names(roles, "principal roles")),
            clearance,
            frozenset(list_of_names(tags, "principal tags")),
        )


@dataclass(frozen=True, slots=True)
class RoleGraph:
    """Roles and the roles each one inherits (``admin -> [editor]`` means admin is an editor)."""

    inherits: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Iterable[str]]) -> RoleGraph:
        graph = cls({role: frozenset(parents) for role, parents in data.items()})
        graph._check_acyclic()
        return graph

    def effective(self, roles: Iterable[str]) -> frozenset[str]:
        """The roles plus everything they inherit, transitively."""
        seen: set[str] = set()
        stack = list(roles)
        while stack:
            role = stack.pop()
            if role in seen:
                continue
            seen.add(role)
            stack.extend(self.inherits.get(role, ()))
        return frozenset(seen)

    def _check_acyclic(self) -> None:
        visiting: set[str] = set()
        done: set[str] = set()

        def visit(role: str, trail: tuple[str, ...]) -> None:
            if role in done:
                return
            if role in visiting:
                cycle = " -> ".join((*trail, role))
                raise ConfigurationError(f"role hierarchy has a cycle: {cycle}")
            visiting.add(role)
            for parent in self.inherits.get(role, ()):
                visit(parent, (*trail, role))
            visiting.discard(role)
            done.add(role)

        for role in self.inherits:
            visit(role, ())


@dataclass(frozen=True, slots=True)
class Classifications:
    """An ordered list of classification levels, lowest first."""

    order: tuple[str, ...] = DEFAULT_CLASSIFICATIONS

    def __post_init__(self) -> None:
        if not self.order or len(set(self.order)) != len(self.order):
            raise ConfigurationError("classifications must be a non-empty list without repeats")

    def rank(self, level: str) -> int:
        try:
            return self.order.index(level)
        except ValueError:
            raise ConfigurationError(
                f"unknown classification {level!r}; known: {', '.join(self.order)}"
            ) from None

    def admits(self, clearance: str, classification: str) -> bool:
        """True when ``clearance`` is at or above ``classification``.

        An unknown level on either side admits nothing (fail closed).
        """
        if clearance not in self.order or classification not in self.order:
            return False
        return self.order.index(classification) <= self.order.index(clearance)


def labels_admit(
    labels: Labels,
    principal: Principal,
    effective_roles: frozenset[str],
    classifications: Classifications,
) -> bool:
    """The document-label part of the access rule: tenant, clearance, roles. Labels that
    could not be determined admit nobody (fail closed)."""
    if labels.undetermined:
        return False
    if labels.tenant is not None and labels.tenant != principal.tenant:
        return False
    if not classifications.admits(principal.clearance, labels.classification):
        return False
    return not labels.roles or bool(labels.roles & effective_roles)


_UNPLAIN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories no acting name may hold: controls, format (zero-width), surrogates,
line and paragraph separators."""


def is_plain_name(value: str) -> bool:
    """Whether ``value`` may name who acts (an id, a tenant, a role, a tag taken from a token
    or a workspace file): no control, format, surrogate or line-separator character. Such a
    character in ``"ana\\nGET /v1/audit 200 root"`` forges a line of a log or an audit
    export, and a zero-width one makes two ids that print alike. Letters of any script,
    spaces and punctuation are plain. (:meth:`Principal.of` itself stays permissive for
    Python callers; the entry points check with this.)"""
    return not any(unicodedata.category(ch) in _UNPLAIN for ch in value)
