"""Configuration that cannot fail open: one schema, every field checked, no pattern ignored.

A string where a list belongs (``principals = "mallory"``) used to become a set of letters, so
a deny rule skipped its target; unknown keys were dropped in places; rule patterns that can
never match (braces, a trailing slash, unbalanced brackets) were accepted and matched nothing.
Each is now a one-line :class:`ConfigurationError` that names the field and the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import Action, Principal, Rule, VPath, load_policy
from bastion.config import WorkspaceConfig, load_workspace
from bastion.core.errors import ConfigurationError
from bastion.core.policy import Policy
from bastion.governance.claims import ClaimsMapping
from bastion.governance.identity_config import IdentityConfig

ALLOW = '[[policy.rules]]\neffect = "allow"\nactions = ["*"]\npaths = ["/**"]\n'
MOUNT = '[[mounts]]\nprefix = "/a"\nurl = "memory://"\n'
SECRET = "hs256-secret-that-is-long-enough-for-the-check"


def _rule(**fields: Any) -> dict[str, Any]:
    return {"effect": "deny", "actions": ["read"], "paths": ["/docs/**"], **fields}


def _policy_error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigurationError) as caught:
        Policy.from_dict(data)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _file_error(tmp_path: Path, text: str, name: str = "bastion.toml") -> str:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        WorkspaceConfig.from_file(file, env={})
    message = str(caught.value)
    assert "\n" not in message and str(file) in message  # one line, naming the file
    return message


# -- a string where a list belongs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"rules": [_rule(principals="mallory")]},
            'principals must be a list of names such as ["mallory"]',
        ),
        ({"rules": [_rule(roles="intern")]}, "policy rule 1: roles must be a list of names"),
        ({"rules": [_rule(tenants="acme")]}, "policy rule 1: tenants must be a list of names"),
        ({"rules": [_rule(actions="read")]}, "policy rule 1: actions must be a list of actions"),
        ({"rules": [_rule(paths="/docs/**")]}, "policy rule 1: paths must be a list of patterns"),
        ({"limits": {"blocked_segments": "hr"}}, "policy limits.blocked_segments must be a list"),
        ({"limits": {"allowed_extensions": ".md"}}, "policy limits.allowed_extensions must be"),
        ({"roles": {"lead": "engineer"}}, "policy roles.lead must be a list of names"),
        ({"classifications": "public"}, "policy classifications must be a list of names"),
        ({"rules": [_rule(roles=[1])]}, "roles must be a list of names; one item is a number"),
        (
            {"rules": [_rule(principals=[""])]},
            "principals must be a list of names; one item is empty",
        ),
        ({"rules": [_rule(principals={"id": "mallory"})]}, "principals must be a list of names"),
        ({"rules": [_rule(description=["x"])]}, "description must be a string"),
        ({"rules": [_rule(effect=True)]}, 'effect must be "allow" or "deny"'),
        ({"limits": {"max_file_bytes": "10"}}, "max_file_bytes must be a whole number"),
        ({"limits": {"max_file_bytes": True}}, "max_file_bytes must be a whole number"),
        ({"rate_limit": {"requests": "9", "window_seconds": 1}}, "requests must be a whole number"),
        ({"rate_limit": {"requests": 9, "window_seconds": "1"}}, "window_seconds must be a number"),
        ({"rate_limit": {"requests": 9}}, "needs both requests and window_seconds"),
        ({"rate_limit": 10}, "policy rate_limit must be a table, not a number"),
        ({"limits": [".git"]}, "policy limits must be a table, not a list"),
        ({"rules": {"effect": "deny"}}, "policy rules must be a list of tables"),
    ],
)
def test_every_policy_field_is_checked(data: dict[str, Any], expected: str) -> None:
    assert expected in _policy_error(data)


def test_a_deny_rule_for_one_principal_denies_that_principal() -> None:
    """The decision the string form got wrong: written as a list, mallory is denied."""
    policy = Policy.from_dict(
        {
            "rules": [
                _rule(principals=["mallory"], actions=["*"]),
                {"effect": "allow", "actions": ["*"], "paths": ["/**"]},
            ]
        }
    )
    page = VPath.parse("/docs/plan.md")
    assert not policy.decide(Principal.of("mallory"), Action.READ, page).allowed
    assert policy.decide(Principal.of("m"), Action.READ, page).allowed
    with pytest.raises(ConfigurationError, match="principals must be a list of names"):
        Rule.deny("*", "/docs/**", principals="mallory")
    with pytest.raises(ConfigurationError, match="roles must be a list of names"):
        Rule(Rule.deny("*", "/x").effect, frozenset({Action.READ}), ("/x",), roles="hr")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        ('roles = "board"', 'principal: roles must be a list of names such as ["board"]'),
        ('tags = "vip"', "principal: tags must be a list of names"),
        ("roles = [3]", "principal: roles must be a list of names; one item is a number"),
        ('tenant = ["acme"]', "principal: tenant must be a non-empty string"),
        ('clearance = "top"', "principal: unknown clearance 'top'"),
        ('roles = ["x"]', "principal: needs an id"),
    ],
)
def test_principal_fields_of_the_workspace_file(
    tmp_path: Path, principal: str, expected: str
) -> None:
    text = (
        f"{MOUNT}{ALLOW}[principal]\n" + ("" if "needs" in expected else 'id = "p"\n') + principal
    )
    assert expected in _file_error(tmp_path, text + "\n")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ('roles = "board"', 'mount /a: labels.roles must be a list of names such as ["board"]'),
        ('tags = "hr"', "mount /a: labels.tags must be a list of names"),
        ("tenant = 7", "mount /a: labels.tenant must be a non-empty string"),
        ('classification = ["restricted"]', "mount /a: labels.classification must be a non-empty"),
    ],
)
def test_mount_label_fields(tmp_path: Path, labels: str, expected: str) -> None:
    text = f"{MOUNT}labels = {{ {labels} }}\n{ALLOW}"
    assert expected in _file_error(tmp_path, text)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"algorithms": "HS256"}, 'identity algorithms must be a list of names such as ["HS256"]'),
        ({"required_claims": "exp"}, "identity required_claims must be a list of names"),
        ({"claims": {"required": "tenant"}}, "claims.required must be a list of names"),
        ({"claims": {"default_roles": "staff"}}, "claims.default_roles must be a list of names"),
        ({"claims": {"default_tags": "x"}}, "claims.default_tags must be a list of names"),
    ],
)
def test_identity_list_fields(data: dict[str, Any], expected: str) -> None:
    base = {
        "issuer": "https://id",
        "audience": "bastion",
        "keys": [{"algorithm": "HS256", "secret": SECRET}],
    }
    with pytest.raises(ConfigurationError) as caught:
        IdentityConfig.from_dict({**base, **data})
    assert expected in str(caught.value) and SECRET not in str(caught.value)


def test_identity_lists_written_as_lists_still_load() -> None:
    mapping = ClaimsMapping.from_dict({"required": ["tenant"], "default_roles": ["staff"]})
    assert mapping.default_roles == {"staff"} and mapping.required == {"tenant"}


# -- unknown keys, at every level ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f'colour = "blue"\n{MOUNT}{ALLOW}', "workspace file: unknown keys colour"),
        (f'{MOUNT}colour = "blue"\n{ALLOW}', "mount /a: unknown keys colour"),
        (
            f'{MOUNT}labels = {{ colour = "blue" }}\n{ALLOW}',
            "mount /a: labels: unknown keys colour",
        ),
        (f'{MOUNT}{ALLOW}[principal]\nid = "p"\ncolour = "b"\n', "principal: unknown keys colour"),
        (
            f'{MOUNT}{ALLOW}[knowledge]\nfolder = "i"\ncolour = "b"\n',
            "knowledge: unknown keys colour",
        ),
        (f'{MOUNT}{ALLOW}[policy.limits]\ncolour = "b"\n', "policy limits: unknown keys colour"),
        (
            f"{MOUNT}{ALLOW}[policy.rate_limit]\nrequests = 1\nwindow_seconds = 1\ncolour = 2\n",
            "policy rate_limit: unknown keys colour",
        ),
        (f'{MOUNT}{ALLOW}colour = "b"\n', "policy rule 1: unknown keys colour"),
        (f'{MOUNT}[policy]\ncolour = "b"\n', "policy: unknown keys colour"),
        (
            f'{MOUNT}{ALLOW}[policy.roles]\nlead = {{ colour = "b" }}\n',
            "policy roles.lead must be a list",
        ),
        (f'index = "i"\n{MOUNT}{ALLOW}', '"index" is now [knowledge] folder'),
        (f'[[mounts]]\nprefix = "/a"\npath = "docs"\n{ALLOW}', 'a mount\'s "path" is now url ='),
    ],
)
def test_unknown_keys_are_named_at_every_level(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in _file_error(tmp_path, text)


def test_the_same_schema_in_yaml(tmp_path: Path) -> None:
    text = (
        "mounts: [{prefix: /a, url: 'memory://', labels: {roles: board}}]\n"
        "policy: {rules: [{effect: allow, actions: ['*'], paths: ['/**']}]}\n"
    )
    assert "mount /a: labels.roles must be a list of names" in _file_error(tmp_path, text, "w.yaml")
    assert "unknown keys colour" in _file_error(tmp_path, "colour: 1\n", "w.yml")


def test_an_unknown_store_option_is_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    file = tmp_path / "bastion.toml"
    file.write_text(
        '[[mounts]]\nprefix = "/d"\nurl = "file:docs"\noptions = { colour = "b" }\n' + ALLOW,
        encoding="utf-8",
    )
    with pytest.raises(ConfigurationError, match="does not take these options: colour"):
        load_workspace(file, env={})


def test_a_policy_file_named_by_the_workspace_file_is_checked_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        "rules:\n  - {effect: deny, actions: ['*'], paths: ['/**'], principals: mallory}\n",
        encoding="utf-8",
    )
    message = _file_error(tmp_path, f'policy = "policy.yaml"\n{MOUNT}')
    assert "policy.yaml: policy rule 1: principals must be a list of names" in message
    with pytest.raises(ConfigurationError, match=r"policy\.yaml: policy rule 1: principals"):
        load_policy(tmp_path / "policy.yaml")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"issuer": "i", "audience": "a", "keys": [], "colour": 1},
            "unknown identity keys: colour",
        ),
        (
            {
                "issuer": "i",
                "audience": "a",
                "keys": [{"algorithm": "HS256", "secret": SECRET, "colour": 1}],
            },
            "unknown key fields: colour",
        ),
        (
            {
                "issuer": "i",
                "audience": "a",
                "keys": [{"algorithm": "HS256", "secret": SECRET}],
                "claims": {"colour": 1},
            },
            "unknown claims keys: colour",
        ),
    ],
)
def test_unknown_identity_keys_are_named(
    tmp_path: Path, data: dict[str, Any], expected: str
) -> None:
    import yaml

    file = tmp_path / "identity.yaml"
    file.write_text(yaml.safe_dump({"identity": data}), encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        IdentityConfig.from_file(file)
    assert expected in str(caught.value) and str(file) in str(caught.value)
    assert SECRET not in str(caught.value)


# -- rule patterns that can never match ----------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("/docs/{hr,legal}/**", "braces {a,b} are not supported"),
        ("/docs/hr}", "braces"),
        ("/docs/hr/", "a trailing / (write /docs/hr/** for the folder and all below"),
        ("/docs//hr", "an empty, . or .. segment"),
        ("/docs/./hr", "an empty, . or .. segment"),
        ("/docs/../hr", "an empty, . or .. segment"),
        ("/docs/[hr", "an unbalanced ["),
        ("/docs/[!", "an unbalanced ["),
        ("/docs/hr]", "an unbalanced ]"),
        ("/docs/[]x", "an empty class []"),
        ("/docs/[!]x", "an empty class []"),
        ("/docs/[z-a].md", "the range z-a is reversed"),
        ("/docs/\tx", "control character"),
        ("docs/**", "must be absolute"),
        ("", "empty"),
    ],
)
def test_patterns_that_can_never_match_are_refused(pattern: str, expected: str) -> None:
    message = _policy_error({"rules": [_rule(paths=["/ok/**", pattern])]})
    assert message.startswith("policy rule 1: ") and expected in message
    with pytest.raises(ConfigurationError, match=r"can never match|absolute|empty"):
        Rule.deny("*", pattern)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("/", "/"),
        ("/**", "/docs/a.md"),
        ("/docs/[!a-c]*.md", "/docs/d.md"),
        ("/docs/[a-c]?.md", "/docs/b1.md"),
        ("/docs/a-b/**", "/docs/a-b/x"),
        ("/docs/(draft) notes.md", "/docs/(draft) notes.md"),
        ("/docs/[[]x", "/docs/[x"),
    ],
)
def test_patterns_that_can_match_still_load_and_match(pattern: str, path: str) -> None:
    policy = Policy.from_dict({"rules": [_rule(paths=[pattern])]})
    assert policy.rules[0].applies(Principal.of("a"), frozenset(), Action.READ, VPath.parse(path))


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"blocked_segments": ["docs/hr"]}, "docs/hr can never match"),
        ({"blocked_segments": [".."]}, ".. can never match"),
        ({"blocked_segments": [""]}, "one item is empty"),
        ({"allowed_extensions": ["md"]}, "md can never match"),
        ({"allowed_extensions": [".tar.gz"]}, ".tar.gz can never match"),
    ],
)
def test_limits_that_can_never_match_are_refused(limits: dict[str, Any], expected: str) -> None:
    assert expected in _policy_error({"limits": limits})


def test_empty_actions_are_refused_and_operator_actions_stay_outside_the_star() -> None:
    assert "needs at least one action" in _policy_error({"rules": [_rule(actions=[])]})
    policy = Policy.from_dict({"rules": [{"effect": "allow", "actions": ["*"], "paths": ["/**"]}]})
    assert Action.REINDEX not in policy.rules[0].actions and Action.READ in policy.rules[0].actions


# -- any value in any field: a configuration error or a policy, never a crash ---------------

_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.sampled_from(["*", "read", "/**", "/docs/[a", "hr", ""]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_FIELDS = {
    "rule": ("effect", "actions", "paths", "roles", "principals", "tenants", "description"),
    "limits": ("max_file_bytes", "allowed_extensions", "blocked_segments"),
    "rate_limit": ("requests", "window_seconds"),
    "top": ("rules", "limits", "rate_limit", "roles", "classifications"),
}


@settings(max_examples=300, deadline=None)
@given(where=st.sampled_from(sorted(_FIELDS)), data=st.data())
def test_any_value_in_any_policy_field_is_a_one_line_error_or_a_policy(
    where: str, data: st.DataObject
) -> None:
    field = data.draw(st.sampled_from(_FIELDS[where]), label="field")
    value = data.draw(_VALUES, label="value")
    rule = {"effect": "deny", "actions": ["read"], "paths": ["/docs/**"]}
    policy: dict[str, Any]
    if where == "rule":
        policy = {"rules": [{**rule, field: value}]}
    elif where == "top":
        policy = {field: value}
    else:
        base = {"requests": 1, "window_seconds": 1} if where == "rate_limit" else {}
        policy = {where: {**base, field: value}}
    try:
        loaded = Policy.from_dict(policy)
    except ConfigurationError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    # What loads holds only what its fields promise: never a string taken for a list.
    for loaded_rule in loaded.rules:
        for names in (loaded_rule.roles, loaded_rule.principals, loaded_rule.tenants):
            assert all(isinstance(n, str) and n for n in names)
        if where == "rule" and field in ("roles", "principals", "tenants") and value:
            assert isinstance(value, list) and set(getattr(loaded_rule, field)) == set(value)
    assert all(isinstance(s, str) and s for s in loaded.limits.blocked_segments)


@settings(max_examples=300, deadline=None)
@given(pattern=st.text(alphabet="/ab*?[]!^-{},.\t", min_size=1, max_size=12))
def test_any_rule_pattern_loads_or_is_refused_in_one_line(pattern: str) -> None:
    try:
        rule = Rule.deny("*", pattern)
    except ConfigurationError as exc:
        assert "\n" not in str(exc)
        return
    # A pattern that loads has none of the shapes that can never match.
    assert pattern.startswith("/") and "{" not in pattern and "}" not in pattern
    assert pattern == "/" or not pattern.endswith("/")
    assert "//" not in pattern and "\t" not in pattern
    assert rule.paths == (pattern,)


_FILE_FIELDS = {
    "mount": ("prefix", "url", "scope", "labels", "description", "timeout", "options"),
    "labels": ("tenant", "classification", "roles", "tags"),
    "principal": ("id", "tenant", "roles", "clearance", "tags"),
    "knowledge": ("folder", "embedder", "index_on_open"),
    "top": ("mounts", "policy", "knowledge", "principal"),
}


@settings(max_examples=300, deadline=None)
@given(where=st.sampled_from(sorted(_FILE_FIELDS)), data=st.data())
def test_any_value_in_any_workspace_file_field_is_a_one_line_error_or_a_config(
    where: str, data: st.DataObject
) -> None:
    field = data.draw(st.sampled_from(_FILE_FIELDS[where]), label="field")
    value = data.draw(_VALUES, label="value")
    mount: dict[str, Any] = {"prefix": "/a", "url": "memory://"}
    file: dict[str, Any] = {"mounts": [mount], "policy": {"rules": []}}
    if where == "mount":
        mount[field] = value
    elif where == "labels":
        mount["labels"] = {field: value}
    elif where == "top":
        file[field] = value
    else:
        file[where] = {"id": "p", "folder": "i"} if where == "principal" else {"folder": "i"}
        file[where] = {k: v for k, v in file[where].items() if k in _FILE_FIELDS[where]}
        file[where][field] = value
    try:
        config = WorkspaceConfig.from_dict(file, env={})
    except ConfigurationError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    for checked in config.mounts:
        assert all(isinstance(r, str) and r for r in checked.labels.roles | checked.labels.tags)
    if config.principal is not None:
        assert all(isinstance(r, str) and r for r in config.principal.roles)


_IDENTITY_FIELDS = (
    *("issuer", "audience", "keys", "algorithms", "leeway_seconds", "required_claims"),
    *("max_token_bytes", "claims", "role_clearances", "key.kid", "key.algorithm", "key.secret"),
    *("claims.subject", "claims.roles", "claims.required", "claims.role_map"),
    *("claims.keep_unmapped_roles", "claims.clearance_map", "claims.default_roles"),
)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(_IDENTITY_FIELDS), value=_VALUES)
def test_any_value_in_any_identity_field_is_a_one_line_error_or_a_config(
    field: str, value: object
) -> None:
    key = {"algorithm": "HS256", "secret": SECRET}
    data: dict[str, Any] = {"issuer": "https://id", "audience": "bastion", "keys": [key]}
    table, _, name = field.rpartition(".")
    if table == "claims":
        data["claims"] = {name: value}
    elif table == "key":
        data["keys"] = [{**key, name: value}]
    else:
        data[name] = value
    try:
        IdentityConfig.from_dict(data)
    except ConfigurationError as exc:
        assert "\n" not in str(exc) and SECRET not in str(exc)


def test_mount_prefixes_are_paths_in_one_spelling(tmp_path: Path) -> None:
    twice = f'{MOUNT}[[mounts]]\nprefix = "/a/"\nurl = "memory://"\n{ALLOW}'
    assert "mount /a: mounted twice" in _file_error(tmp_path, twice)
    broken = f'[[mounts]]\nprefix = "/a\\nb"\nurl = "memory://"\n{ALLOW}'
    assert "mount '/a\\nb': the prefix is not a path" in _file_error(tmp_path, broken)
    claims = {"issuer": "i", "audience": "a", "keys": [], "claims": {"\n": 1}}
    with pytest.raises(ConfigurationError) as caught:
        IdentityConfig.from_dict(claims)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "knowledge",
    [
        'folder = "i"\nvariant = "int4"\n',
        'folder = "i"\nvariant = 8\n',
        'folder = "i"\nembedder = "none"\nvariant = "int8"\n',
    ],
)
def test_a_variant_is_one_of_the_local_models(tmp_path: Path, knowledge: str) -> None:
    error = _file_error(tmp_path, f"{MOUNT}{ALLOW}[knowledge]\n{knowledge}")
    assert "knowledge: variant must be one of fp32, int8, fp16, bf16, with embedder = 'local'" in (
        error
    )


def test_the_variant_reaches_the_local_model(tmp_path: Path) -> None:
    file = tmp_path / "bastion.toml"
    file.write_text(f'{MOUNT}{ALLOW}[knowledge]\nfolder = "i"\nvariant = "int8"\n', "utf-8")
    config = WorkspaceConfig.from_file(file, env={})
    assert config.knowledge is not None and config.knowledge.variant == "int8"
    knowledge = config.knowledge.open(config.mounts, base=tmp_path)
    try:
        assert knowledge.embedder is not None and knowledge.embedder.name.endswith(":int8")
    finally:
        knowledge.close()
