"""Policy as data: path rules per action, file limits, rate limits, roles and classifications.

Rules are checked in order and the first rule that applies decides; when none applies the
answer is deny. Every :class:`Decision` carries its reason. A policy is built from Python
objects or from a mapping (what a TOML or YAML file holds, see :meth:`Policy.from_dict` and
``docs/policy.md``).
"""

from __future__ import annotations

import tomllib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from bastion.core.errors import ConfigurationError, InvalidPatternError
from bastion.core.globs import Glob
from bastion.core.models import DEFAULT_CLASSIFICATIONS, FILE_ACTIONS, Action
from bastion.core.paths import VPath
from bastion.core.principal import Classifications, Principal, RoleGraph

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
        if not self.paths:
            raise ConfigurationError("a policy rule needs at least one path pattern")
        globs: list[Glob] = []
        for pattern in self.paths:
            if not pattern.startswith("/"):
                raise ConfigurationError(f"rule path {pattern!r} must be absolute (start with /)")
            try:
                globs.append(Glob.compile(pattern))
            except InvalidPatternError as exc:
                raise ConfigurationError(f"rule path {pattern!r}: {exc}") from exc
        object.__setattr__(self, "_globs", tuple(globs))

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
        unknown = set(who) - {"roles", "principals", "tenants", "description"}
        if unknown:
            raise ConfigurationError(f"unknown rule fields: {', '.join(sorted(unknown))}")
        return cls(
            effect,
            _parse_actions(actions),
            tuple(paths),
            roles=frozenset(who.get("roles", ())),
            principals=frozenset(who.get("principals", ())),
            tenants=frozenset(who.get("tenants", ())),
            description=str(who.get("description", "")),
        )

    def applies(
        self, principal: Principal, roles: frozenset[str], action: Action, path: VPath
    ) -> bool:
        if action not in self.actions:
            return False
        if self.principals and principal.id not in self.principals:
            return False
        if self.tenants and principal.tenant not in self.tenants:
            return False
        if self.roles and not (self.roles & roles):
            return False
        return any(glob.matches(path) for glob in self._globs)


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
        """Build a policy from plain data (the shape of a policy TOML or YAML file)."""
        known = {"rules", "limits", "rate_limit", "roles", "classifications"}
        unknown = set(data) - known
        if unknown:
            raise ConfigurationError(f"unknown policy keys: {', '.join(sorted(unknown))}")
        rules = []
        for i, raw in enumerate(data.get("rules", [])):
            if not isinstance(raw, Mapping):
                raise ConfigurationError(f"rule {i + 1} must be a table")
            raw_rule = dict(raw)
            try:
                effect = Effect(raw_rule.pop("effect"))
            except (KeyError, ValueError):
                raise ConfigurationError(
                    f"rule {i + 1}: effect must be 'allow' or 'deny'"
                ) from None
            actions = raw_rule.pop("actions", None)
            paths = raw_rule.pop("paths", None)
            if actions is None or paths is None:
                raise ConfigurationError(f"rule {i + 1}: needs 'actions' and 'paths'")
            if isinstance(paths, str):
                paths = [paths]
            rules.append(Rule._make(effect, actions, paths, raw_rule))
        limits_data = dict(data.get("limits", {}))
        limits = FileLimits(
            max_file_bytes=int(limits_data.pop("max_file_bytes", DEFAULT_MAX_FILE_BYTES)),
            allowed_extensions=(
                frozenset(limits_data.pop("allowed_extensions"))
                if "allowed_extensions" in limits_data
                else None
            ),
            blocked_segments=frozenset(limits_data.pop("blocked_segments", ())),
        )
        if limits_data:
            raise ConfigurationError(f"unknown limits keys: {', '.join(sorted(limits_data))}")
        rate = data.get("rate_limit")
        try:
            rate_limit = (
                RateLimit(int(rate["requests"]), float(rate["window_seconds"])) if rate else None
            )
        except (KeyError, TypeError, ValueError):
            raise ConfigurationError(
                "rate_limit needs numeric 'requests' and 'window_seconds'"
            ) from None
        return cls(
            rules=tuple(rules),
            limits=limits,
            rate_limit=rate_limit,
            roles=RoleGraph.from_mapping(data.get("roles", {})),
            classifications=Classifications(
                tuple(data.get("classifications", DEFAULT_CLASSIFICATIONS))
            ),
        )

    @classmethod
    def from_toml(cls, path: str | Path) -> Policy:
        """Load a policy file written in TOML (YAML files: ``bastion.config.load_policy``)."""
        try:
            with Path(path).open("rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"cannot load policy {path}: {exc}") from exc
        return cls.from_dict(data)


def _parse_actions(actions: Iterable[str] | str) -> frozenset[Action]:
    """The actions a rule names; ``*`` stands for every file action (``FILE_ACTIONS``), never
    for an operator action (``label``, ``reindex``, ``audit``), which a rule must name."""
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
