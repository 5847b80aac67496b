"""Policy as data: path rules per action, file limits, rate limits, roles and classifications.

Rules are checked in order and the first rule that applies decides; when none applies the
answer is deny. Every :class:`Decision` carries its reason. A policy is built from Python
objects or from a mapping (what a TOML or YAML file holds, see :meth:`Policy.from_dict` and
``docs/policy.md``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.core.globs import Glob
from bastion.core.models import DEFAULT_CLASSIFICATIONS, FILE_ACTIONS, Action
from bastion.core.paths import VPath
from bastion.core.principal import Classifications, Principal, RoleGraph
from bastion.core.rule_patterns import rule_glob
from bastion.core.schema import (
    check_keys,
    list_of_names,
    list_of_tables,
    name,
    number,
    positive_int,
    show,
    table,
    text,
)

__all__ = ["Decision", "Effect", "FileLimits", "Policy", "RateLimit", "Rule"]

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


class Effect(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to "may this principal do this here?", with its reason."""

    allowed: bool
    reason: str
    rule: int | None = None
    """Index of the deciding rule, or ``None`` for the default deny / a non-rule decision."""
    public_reason: str = ""
    """What may be shown to the caller (the rule's description, if it has one)."""


@dataclass(frozen=True)
class Rule:
    """Allow or deny ``actions`` on ``paths`` for principals that match.

    Empty ``roles``, ``principals`` and ``tenants`` match everyone.
    """

    effect: Effect
    actions: frozenset[Action]
    paths: tuple[str, ...]
    roles: frozenset[str] = frozenset()
    principals: frozenset[str] = frozenset()
    tenants: frozenset[str] = frozenset()
    description: str = ""
    _globs: tuple[Glob, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fix = object.__setattr__
        paths: object = self.paths
        if isinstance(paths, str) or not self.paths:
            raise ConfigurationError(
                'a policy rule needs a list of path patterns such as ["/docs/**"]'
            )
        for who in ("roles", "principals", "tenants"):
            fix(self, who, frozenset(list_of_names(getattr(self, who), who)))
        text(self.description, "description")
        actions: Iterable[object] = self.actions
        if isinstance(actions, str) or not all(isinstance(a, Action) for a in actions):
            raise ConfigurationError("rule actions must be Action values (Rule.allow names them)")
        if not actions:
            raise ConfigurationError("a policy rule needs at least one action")
        fix(self, "actions", frozenset(self.actions))
        fix(self, "_globs", tuple(rule_glob(pattern) for pattern in self.paths))

    @classmethod
    def allow(cls, actions: Iterable[str] | str, *paths: str, **who: Any) -> Rule:
        return cls._make(Effect.ALLOW, actions, paths, who)

    @classmethod
    def deny(cls, actions: Iterable[str] | str, *paths: str, **who: Any) -> Rule:
        return cls._make(Effect.DENY, actions, paths, who)

    @classmethod
    def _make(
        cls,
        effect: Effect,
        actions: Iterable[str] | str,
        paths: Iterable[str],
        who: Mapping[str, Any],
    ) -> Rule:
        check_keys(who, ("roles", "principals", "tenants", "description"), "a rule")
        return cls(
            effect,
            _parse_actions(actions),
            tuple(paths),
            roles=who.get("roles", frozenset()),
            principals=who.get("principals", frozenset()),
            tenants=who.get("tenants", frozenset()),
            description=who.get("description", ""),
        )

    @property
    def globs(self) -> tuple[Glob, ...]:
        """The rule's path patterns, compiled once (one per entry of ``paths``)."""
        return self._globs

    def concerns(self, principal: Principal, roles: frozenset[str], action: Action) -> bool:
        """True when the rule speaks about ``action`` for ``principal`` (with its effective
        ``roles``), wherever it is done: :meth:`applies` without the path."""
        if action not in self.actions:
            return False
        if self.principals and principal.id not in self.principals:
            return False
        if self.tenants and principal.tenant not in self.tenants:
            return False
        return not self.roles or bool(self.roles & roles)

    def applies(
        self, principal: Principal, roles: frozenset[str], action: Action, path: VPath
    ) -> bool:
        return self.concerns(principal, roles, action) and any(
            glob.matches(path) for glob in self._globs
        )


@dataclass(frozen=True, slots=True)
class FileLimits:
    """Limits on files, whoever asks."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """Largest file that may be written, and most bytes one read returns (a whole file, a
    byte range or a run of lines): bigger files are read a range at a time."""
    allowed_extensions: frozenset[str] | None = None
    """Extensions (``.md``) a write may create; ``None`` allows all, ``""`` means no extension."""
    blocked_segments: frozenset[str] = frozenset()
    """Names that make a path invisible and untouchable anywhere they appear (``.git``).
    Compared per segment, case-insensitively and after NFC normalization; ``.gitignore`` is
    not blocked by ``.git``."""
    _folded: frozenset[str] = field(init=False, repr=False, compare=False)
    _extensions: frozenset[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_folded", frozenset(_fold(s) for s in self.blocked_segments))
        object.__setattr__(
            self,
            "_extensions",
            None
            if self.allowed_extensions is None
            else frozenset(_nfc(e).lower() for e in self.allowed_extensions),
        )

    def blocked(self, path: VPath) -> str | None:
        """The blocked segment in ``path``, if any."""
        folded = self._folded
        if not folded:
            return None
        for part in path.parts:
            if _fold(part) in folded:
                return part
        return None

    def extension_allowed(self, path: VPath) -> bool:
        if self._extensions is None:
            return True
        return path.suffix in self._extensions


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _fold(text: str) -> str:
    """Caseless form for comparing names: NFC, case-folded, NFC again (folding can denormalize)."""
    return _nfc(_nfc(text).casefold())


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``requests`` operations per principal in any ``window_seconds``."""

    requests: int
    window_seconds: float

    def __post_init__(self) -> None:
        if self.requests < 1 or self.window_seconds <= 0:
            raise ConfigurationError("rate limit needs requests >= 1 and window_seconds > 0")


@dataclass(frozen=True)
class Policy:
    """Rules, limits, roles and classifications. The default (no rules) denies everything."""

    rules: tuple[Rule, ...] = ()
    limits: FileLimits = field(default_factory=FileLimits)
    rate_limit: RateLimit | None = None
    roles: RoleGraph = field(default_factory=RoleGraph)
    classifications: Classifications = field(default_factory=Classifications)

    @classmethod
    def allow_all(cls, **kwargs: Any) -> Policy:
        """A policy that allows every action on every path, the operator actions (``label``,
        ``reindex``, ``audit``) included; scopes and labels still apply."""
        return cls(rules=(Rule.allow(list(Action), "/**", description="allow all"),), **kwargs)

    def effective_roles(self, principal: Principal) -> frozenset[str]:
        return self.roles.effective(principal.roles)

    def decide(
        self,
        principal: Principal,
        action: Action,
        path: VPath,
        roles: frozenset[str] | None = None,
    ) -> Decision:
        """First matching rule wins; no match is a deny."""
        effective = self.effective_roles(principal) if roles is None else roles
        for index, rule in enumerate(self.rules):
            if rule.applies(principal, effective, action, path):
                allowed = rule.effect is Effect.ALLOW
                label = rule.description or f"rule {index + 1}"
                return Decision(
                    allowed=allowed,
                    reason=f"{rule.effect.value} {action.value} by {label}",
                    rule=index,
                    public_reason=rule.description,
                )
        return Decision(allowed=False, reason="no rule matched (default deny)")

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Build a policy from plain data (the shape of a policy TOML or YAML file). Every
        field is checked: an unknown key, a string where a list belongs, a pattern that could
        never match is a one-line :class:`ConfigurationError` naming the field."""
        table(data, "policy")
        check_keys(data, _POLICY_KEYS, "policy")
        order = data.get("classifications", list(DEFAULT_CLASSIFICATIONS))
        classifications = Classifications(list_of_names(order, "policy classifications"))
        inherits = table(data.get("roles", {}), "policy roles")
        roles = RoleGraph.from_mapping(
            {
                name(role, "policy roles: a role"): list_of_names(
                    parents, f"policy roles.{show(role)}"
                )
                for role, parents in inherits.items()
            }
        )
        rules = tuple(
            _rule_from_dict(raw, f"policy rule {n + 1}")
            for n, raw in enumerate(list_of_tables(data.get("rules", []), "policy rules"))
        )
        return cls(
            rules=rules,
            limits=_limits_from_dict(data.get("limits", {})),
            rate_limit=_rate_from_dict(data.get("rate_limit")),
            roles=roles,
            classifications=classifications,
        )


def _parse_actions(actions: Iterable[str] | str) -> frozenset[Action]:
    """The actions a rule names; ``*`` stands for every file action (``FILE_ACTIONS``), never
    for an operator action (``execute``, ``label``, ``reindex``, ``audit``), which a rule must
    name."""
    items = [actions] if isinstance(actions, str) else list(actions)
    found: set[Action] = set()
    for item in items:
        if item == "*":
            found |= FILE_ACTIONS
            continue
        try:
            found.add(Action(item))
        except ValueError:
            known = ", ".join(a.value for a in Action)
            raise ConfigurationError(
                f"unknown action {item!r} in a rule; known: {known} or *"
            ) from None
    return frozenset(found)


_POLICY_KEYS = ("rules", "limits", "rate_limit", "roles", "classifications")
_RULE_KEYS = ("effect", "actions", "paths", "roles", "principals", "tenants", "description")
_LIMIT_KEYS = ("max_file_bytes", "allowed_extensions", "blocked_segments")
_RATE_KEYS = ("requests", "window_seconds")


def _rule_from_dict(raw: Mapping[str, Any], where: str) -> Rule:
    check_keys(raw, _RULE_KEYS, where)
    for required in ("effect", "actions", "paths"):
        if required not in raw:
            raise ConfigurationError(
                f"{where}: needs effect, actions and paths; {required} is missing"
            )
    effect = raw["effect"]
    if effect not in ("allow", "deny"):
        raise ConfigurationError(f'{where}: effect must be "allow" or "deny"')
    try:
        return Rule(
            Effect(effect),
            _parse_actions(list_of_names(raw["actions"], "actions", noun="actions")),
            list_of_names(raw["paths"], "paths", noun="patterns"),
            roles=raw.get("roles", frozenset()),
            principals=raw.get("principals", frozenset()),
            tenants=raw.get("tenants", frozenset()),
            description=raw.get("description", ""),
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def _limits_from_dict(raw: object) -> FileLimits:
    data = table(raw, "policy limits")
    check_keys(data, _LIMIT_KEYS, "policy limits")
    extensions = None
    if "allowed_extensions" in data:
        where = "policy limits.allowed_extensions"
        extensions = frozenset(list_of_names(data["allowed_extensions"], where, allow_empty=True))
        for ext in extensions:
            if ext and (not ext.startswith(".") or "." in ext[1:] or "/" in ext or len(ext) < 2):
                raise ConfigurationError(
                    f'{where}: {show(ext)} can never match; an extension is written ".md" '
                    '(its last dot on), "" for none'
                )
    where = "policy limits.blocked_segments"
    segments = frozenset(list_of_names(data.get("blocked_segments", ()), where))
    for segment in segments:
        if "/" in segment or segment in (".", ".."):
            raise ConfigurationError(
                f"{where}: {show(segment)} can never match; a blocked segment is one name "
                'of a path, such as ".git"'
            )
    size = data.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    return FileLimits(
        max_file_bytes=positive_int(size, "policy limits.max_file_bytes"),
        allowed_extensions=extensions,
        blocked_segments=segments,
    )


def _rate_from_dict(raw: object) -> RateLimit | None:
    if raw is None:
        return None
    data = table(raw, "policy rate_limit")
    check_keys(data, _RATE_KEYS, "policy rate_limit")
    if set(data) != set(_RATE_KEYS):
        raise ConfigurationError("policy rate_limit needs both requests and window_seconds")
    return RateLimit(
        positive_int(data["requests"], "policy rate_limit.requests"),
        number(data["window_seconds"], "policy rate_limit.window_seconds"),
    )
