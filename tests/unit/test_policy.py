"""Policy decisions as a decision table, plus loading from TOML and YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.config import load_policy
from bastion.core.errors import ConfigurationError
from bastion.core.models import Action, Labels
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, RateLimit, Rule
from bastion.core.principal import Classifications, Principal, RoleGraph, labels_admit

POLICY = Policy(
    rules=(
        Rule.deny("*", "/docs/hr/**", roles={"engineer"}, description="HR only"),
        Rule.allow("*", "/docs/hr/**", roles={"hr"}),
        Rule.allow({"read", "list", "search"}, "/docs/**", roles={"employee"}),
        Rule.allow("write", "/scratch/**", principals={"bot"}),
        Rule.allow("read", "/tenant-a/**", tenants={"a"}),
    ),
    roles=RoleGraph.from_mapping({"engineer": ["employee"], "hr": ["employee"]}),
)

ENGINEER = Principal.of("eve", roles={"engineer"})
HR = Principal.of("hank", roles={"hr"})
BOT = Principal.of("bot")
NOBODY = Principal.of("nobody")


@pytest.mark.parametrize(
    ("principal", "action", "path", "allowed", "reason_fragment"),
    [
        (ENGINEER, Action.READ, "/docs/a.md", True, "rule 3"),
        (ENGINEER, Action.WRITE, "/docs/a.md", False, "default deny"),
        (ENGINEER, Action.READ, "/docs/hr/pay.md", False, "HR only"),
        (ENGINEER, Action.LIST, "/docs/hr", False, "HR only"),
        (HR, Action.READ, "/docs/hr/pay.md", True, "rule 2"),
        (HR, Action.DELETE, "/docs/hr/pay.md", True, "rule 2"),
        (NOBODY, Action.READ, "/docs/a.md", False, "default deny"),
        (BOT, Action.WRITE, "/scratch/x", True, "rule 4"),
        (BOT, Action.READ, "/scratch/x", False, "default deny"),
        (ENGINEER, Action.READ, "/docs2/a.md", False, "default deny"),
        (Principal.of("x", tenant="a"), Action.READ, "/tenant-a/f", True, "rule 5"),
        (Principal.of("x", tenant="b"), Action.READ, "/tenant-a/f", False, "default deny"),
    ],
)
def test_decision_table(
    principal: Principal, action: Action, path: str, allowed: bool, reason_fragment: str
) -> None:
    decision = POLICY.decide(principal, action, VPath.parse(path))
    assert decision.allowed is allowed
    assert reason_fragment in decision.reason


def test_empty_policy_denies_everything() -> None:
    decision = Policy().decide(ENGINEER, Action.READ, VPath.ROOT)
    assert not decision.allowed
    assert decision.reason == "no rule matched (default deny)"


def test_role_inheritance_is_transitive_and_cycles_are_refused() -> None:
    graph = RoleGraph.from_mapping({"admin": ["lead"], "lead": ["dev"], "dev": []})
    assert graph.effective({"admin"}) == {"admin", "lead", "dev"}
    with pytest.raises(ConfigurationError, match="cycle"):
        RoleGraph.from_mapping({"a": ["b"], "b": ["a"]})


def test_classifications_and_labels() -> None:
    order = Classifications()
    assert order.admits("confidential", "internal")
    assert not order.admits("internal", "confidential")
    assert not order.admits("top-secret", "public")  # unknown clearance admits nothing
    p = Principal.of("u", tenant="t1", roles={"dev"}, clearance="internal")
    roles = frozenset({"dev"})
    assert labels_admit(Labels(classification="internal"), p, roles, order)
    assert not labels_admit(Labels(classification="restricted"), p, roles, order)
    assert not labels_admit(Labels(tenant="t2"), p, roles, order)
    assert labels_admit(Labels(roles=frozenset({"dev", "ops"})), p, roles, order)
    assert not labels_admit(Labels(roles=frozenset({"ops"})), p, roles, order)


def test_limits() -> None:
    limits = FileLimits(
        allowed_extensions=frozenset({".md", ""}), blocked_segments=frozenset({".git"})
    )
    assert limits.blocked(VPath.parse("/repo/.git/config")) == ".git"
    assert limits.blocked(VPath.parse("/repo/.GIT/config")) == ".GIT"
    assert limits.blocked(VPath.parse("/repo/.gitignore")) is None
    assert limits.blocked(VPath.parse("/repo/my.git.notes")) is None
    assert limits.extension_allowed(VPath.parse("/a.MD"))
    assert limits.extension_allowed(VPath.parse("/Makefile"))
    assert not limits.extension_allowed(VPath.parse("/a.exe"))


POLICY_TOML = """
classifications = ["public", "internal", "secret"]

[roles]
lead = ["dev"]

[limits]
max_file_bytes = 1024
allowed_extensions = [".md", ".txt"]
blocked_segments = [".git"]

[rate_limit]
requests = 10
window_seconds = 1.5

[[rules]]
effect = "deny"
actions = ["read"]
paths = ["/private/**"]
description = "private"

[[rules]]
effect = "allow"
actions = ["*"]
paths = ["/**"]
roles = ["dev"]
"""

POLICY_YAML = """
classifications: [public, internal, secret]
roles: {lead: [dev]}
limits: {max_file_bytes: 1024, allowed_extensions: [.md, .txt], blocked_segments: [.git]}
rate_limit: {requests: 10, window_seconds: 1.5}
rules:
  - {effect: deny, actions: [read], paths: [/private/**], description: private}
  - {effect: allow, actions: ["*"], paths: [/**], roles: [dev]}
"""


@pytest.mark.parametrize(("name", "text"), [("p.toml", POLICY_TOML), ("p.yaml", POLICY_YAML)])
def test_policy_files(tmp_path: Path, name: str, text: str) -> None:
    file = tmp_path / name
    file.write_text(text)
    policy = load_policy(file)
    lead = Principal.of("l", roles={"lead"})
    assert policy.decide(lead, Action.WRITE, VPath.parse("/x")).allowed
    assert not policy.decide(lead, Action.READ, VPath.parse("/private/x")).allowed
    assert policy.limits.max_file_bytes == 1024
    assert policy.rate_limit == RateLimit(10, 1.5)
    assert policy.classifications.order == ("public", "internal", "secret")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"rules": [{"effect": "maybe", "actions": ["read"], "paths": ["/x"]}]}, "effect"),
        ({"rules": [{"effect": "allow", "actions": ["fly"], "paths": ["/x"]}]}, "unknown action"),
        ({"rules": [{"effect": "allow", "actions": ["read"], "paths": ["x"]}]}, "absolute"),
        ({"rules": [{"effect": "allow", "actions": ["read"]}]}, "needs"),
        (
            {"rules": [{"effect": "allow", "actions": ["read"], "paths": ["/x"], "colour": 1}]},
            "policy rule 1: unknown keys colour",
        ),
        ({"limits": {"max_bytes": 3}}, "policy limits: unknown keys max_bytes"),
        ({"typo": 1}, "policy: unknown keys typo"),
        ({"rate_limit": {"requests": 0, "window_seconds": 1}}, "rate_limit.requests"),
        ({"classifications": ["a", "a"]}, "without repeats"),
    ],
)
def test_invalid_policy_data(data: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Policy.from_dict(data)


def test_bad_policy_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text("rules = [")
    with pytest.raises(ConfigurationError, match=r"policy file .* is not valid TOML"):
        load_policy(bad)
    with pytest.raises(ConfigurationError, match=r"\.toml, \.yaml"):
        load_policy(tmp_path / "p.json")
