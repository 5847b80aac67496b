"""Claims to principal: which claim holds the subject, the tenant, the roles and the clearance.

Identity providers disagree on where they put things (Keycloak: ``realm_access.roles``; Auth0:
``https://example.com/roles``; plain OAuth: a space-separated ``scope``), so the mapping is
configuration, not code. A claim path is a key of the claims, or a dotted path into nested
objects; keys that themselves hold dots are matched whole first (longest key wins), so
``https://example.com/claims.roles`` reaches ``{"https://example.com/claims": {"roles": ...}}``.

The mapping only ever reads claims from a token whose signature, issuer, audience and times
were already checked. Its errors name the claim, never the claim's value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.core.principal import Principal, is_plain_name
from bastion.core.schema import list_of_names, show
from bastion.governance.errors import TokenClaimsError

__all__ = ["ClaimsMapping", "claim_at"]

_OPTIONAL_FIELDS = frozenset({"tenant", "roles", "clearance", "tags"})
_ABSENT = object()
_MAX_DEPTH = 8


def claim_at(claims: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` (a key, or a dotted path into nested objects), or ``None``.

    A whole key wins over a dotted walk, and a longer key over a shorter one, so claim names
    that contain dots (URLs) still work.
    """
    found = _walk(claims, path.split("."), 0)
    return None if found is _ABSENT else found


def _walk(node: Mapping[str, Any], parts: list[str], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return _ABSENT
    for cut in range(len(parts), 0, -1):
        key = ".".join(parts[:cut])
        if key not in node:
            continue
        value = node[key]
        if cut == len(parts):
            return value
        if isinstance(value, Mapping):
            found = _walk(value, parts[cut:], depth + 1)
            if found is not _ABSENT:
                return found
    return _ABSENT


@dataclass(frozen=True, kw_only=True)
class ClaimsMapping:
    """Where a verified token's claims put the subject, tenant, roles, clearance and tags.

    ``None`` for a claim path means "never read from the token; always the default".
    """

    subject: str = "sub"
    """Claim holding the principal id; always required, a non-empty string."""
    tenant: str | None = "tenant"
    roles: str | None = "roles"
    """A list of strings or one space-separated string (like OAuth's ``scope``)."""
    clearance: str | None = "clearance"
    tags: str | None = None
    required: frozenset[str] = frozenset({"tenant"})
    """Which of tenant, roles, clearance, tags must be present; the tenant by default, so a
    token without one never lands in the default tenant by accident."""
    role_map: Mapping[str, tuple[str, ...]] | None = None
    """External role name to internal role names. When set, roles it does not name are
    dropped unless :attr:`keep_unmapped_roles`."""
    keep_unmapped_roles: bool = False
    clearance_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """External clearance name to internal classification (``secret`` -> ``restricted``)."""
    default_tenant: str = "default"
    default_roles: frozenset[str] = frozenset()
    default_clearance: str = "public"
    default_tags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # Normalize what a caller may hand over as plain lists and dicts (a role mapped to one
        # string, say), so every instance holds the same immutable shapes.
        fix = object.__setattr__
        fix(self, "required", frozenset(_strings(self.required, "claims.required")))
        if self.role_map is not None:
            fix(self, "role_map", _role_map(self.role_map))
        fix(self, "clearance_map", _string_map(self.clearance_map, "claims.clearance_map"))
        for name in ("default_roles", "default_tags"):
            fix(self, name, frozenset(_strings(getattr(self, name), f"claims.{name}")))
        unknown = set(self.required) - _OPTIONAL_FIELDS
        if unknown:
            raise ConfigurationError(
                f"claims.required may name only {', '.join(sorted(_OPTIONAL_FIELDS))}; "
                f"not {', '.join(sorted(unknown))}"
            )
        for name in self.required:
            if getattr(self, name) is None:
                raise ConfigurationError(f"claims.required names {name}, but no claim maps it")
        for name in ("subject", "tenant", "roles", "clearance", "tags"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigurationError(f"claims.{name} must be a non-empty claim path")

    # -- mapping -----------------------------------------------------------------------------

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """The principal these (verified) claims describe; refused if a required one is absent."""
        subject = claim_at(claims, self.subject)
        if subject is None:
            raise _missing(self.subject)
        if not isinstance(subject, str) or not subject:
            raise TokenClaimsError(
                f"token claim {self.subject!r} must be a non-empty string: "
                "ask your identity provider for a valid token"
            )
        _plain(self.subject, subject)
        tenant = self._string("tenant", claims)
        clearance = self._string("clearance", claims)
        roles = self._names("roles", claims)
        tags = self._names("tags", claims)
        return Principal(
            subject,
            self.default_tenant if tenant is None else tenant,
            self.default_roles if roles is None else self._map_roles(roles),
            self.default_clearance if clearance is None else self._map_clearance(clearance),
            self.default_tags if tags is None else frozenset(tags),
        )

    def _value(self, name: str, claims: Mapping[str, Any]) -> tuple[str, Any]:
        path: str | None = getattr(self, name)
        if path is None:
            return "", None
        value = claim_at(claims, path)
        if value is None and name in self.required:
            raise _missing(path)
        return path, value

    def _string(self, name: str, claims: Mapping[str, Any]) -> str | None:
        path, value = self._value(name, claims)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise TokenClaimsError(
                f"token claim {path!r} has the wrong type: expected a non-empty string; "
                "ask your identity provider for a valid token"
            )
        _plain(path, value)
        return value

    def _names(self, name: str, claims: Mapping[str, Any]) -> list[str] | None:
        path, value = self._value(name, claims)
        if value is None:
            return None
        if isinstance(value, str):
            _plain(path, value)
            return value.split()
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            for item in value:
                _plain(path, item)
            return [item for item in value if item]
        raise TokenClaimsError(
            f"token claim {path!r} has the wrong type: expected a list of strings "
            "or a space-separated string; ask your identity provider for a valid token"
        )

    def _map_roles(self, roles: Iterable[str]) -> frozenset[str]:
        if self.role_map is None:
            return frozenset(roles)
        mapped: set[str] = set()
        for role in roles:
            internal = self.role_map.get(role)
            if internal is not None:
                mapped.update(internal)
            elif self.keep_unmapped_roles:
                mapped.add(role)
        return frozenset(mapped)

    def _map_clearance(self, clearance: str) -> str:
        return self.clearance_map.get(clearance, clearance)

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClaimsMapping:
        """Build from a ``[claims]`` table (see ``docs/identity.md``).

        A claim path may be ``false`` (TOML) or ``null`` (YAML) to never read that field.
        """
        known = {
            "subject",
            "tenant",
            "roles",
            "clearance",
            "tags",
            "required",
            "role_map",
            "keep_unmapped_roles",
            "clearance_map",
            "default_tenant",
            "default_roles",
            "default_clearance",
            "default_tags",
        }
        unknown = set(data) - known
        if unknown:
            raise ConfigurationError(
                f"unknown claims keys: {', '.join(sorted(show(k) for k in unknown))}"
            )
        kwargs: dict[str, Any] = {}
        for name in ("subject", "tenant", "roles", "clearance", "tags"):
            if name in data:
                value = data[name]
                kwargs[name] = None if value is None or value is False else value
        if kwargs.get("subject", "sub") is None:
            raise ConfigurationError("claims.subject cannot be turned off: a principal needs an id")
        for name in ("required", "default_roles", "default_tags"):
            if name in data:  # lists: a lone string is refused, never split into letters
                kwargs[name] = list_of_names(data[name], f"claims.{name}")
        for name in ("role_map", "clearance_map"):
            if name in data:
                kwargs[name] = data[name]
        if "keep_unmapped_roles" in data:
            keep = data["keep_unmapped_roles"]
            if not isinstance(keep, bool):
                raise ConfigurationError("claims.keep_unmapped_roles must be true or false")
            kwargs["keep_unmapped_roles"] = keep
        for name in ("default_tenant", "default_clearance"):
            if name in data:
                value = data[name]
                if not isinstance(value, str) or not value:
                    raise ConfigurationError(f"claims.{name} must be a non-empty string")
                kwargs[name] = value
        return cls(**kwargs)


def _plain(path: str, value: str) -> None:
    """Refuse a claim holding control, format or line-separator characters: an id such as
    ``"ana\\nGET /v1/audit 200 root"`` would forge a line of the request log and of any
    audit export, and a zero-width character makes two ids that print alike."""
    if not is_plain_name(value):
        raise TokenClaimsError(
            f"token claim {path!r} holds a control or invisible character: "
            "ask your identity provider for a valid token"
        )


def _missing(path: str) -> TokenClaimsError:
    return TokenClaimsError(
        f"token is missing the required claim {path!r}: ask your identity provider to include it"
    )


def _strings(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple | frozenset | set) and all(
        isinstance(v, str) and v for v in value
    ):
        return list(value)
    raise ConfigurationError(f"{where} must be a list of non-empty strings")


def _string_map(value: object, where: str) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
    ):
        raise ConfigurationError(f"{where} must map names to non-empty strings")
    return MappingProxyType(dict(value))


def _role_map(value: object) -> Mapping[str, tuple[str, ...]]:
    if not isinstance(value, Mapping):
        raise ConfigurationError("claims.role_map must map external roles to internal ones")
    mapped: dict[str, tuple[str, ...]] = {}
    for external, internal in value.items():
        if not isinstance(external, str):
            raise ConfigurationError("claims.role_map keys must be strings")
        mapped[external] = tuple(_strings(internal, f"claims.role_map[{external!r}]"))
    return MappingProxyType(mapped)
