"""Principals from JWTs: valid tokens for every algorithm, claim mapping, configuration, and the
identity a request carries (effective roles, maximum clearance) used on a real workspace.

Keys are real (RSA 2048 and Ed25519 generated with ``cryptography``); tokens are signed by
PyJWT; the clock is a fixed number so time boundaries are exact. Attacks live in
``test_jwt_attacks.py``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt_keys import public_pem

from bastion import Labels, MemoryStore, Mount, NotFoundError, Policy, Principal, Workspace
from bastion.core.errors import ConfigurationError, OperationError
from bastion.core.principal import Classifications, RoleGraph
from bastion.governance.claims import ClaimsMapping, claim_at
from bastion.governance.errors import AuthenticationError, TokenClaimsError
from bastion.governance.identity import (
    Identity,
    IdentityConfig,
    JwtVerifier,
    VerificationKey,
    bearer_token,
)

NOW = 1_800_000_000.0
ISSUER = "https://id.example.test"
AUDIENCE = "bastion"


@pytest.fixture(scope="module")
def keys(rsa_key: Any, ed_key: Any, hs_secret: bytes) -> tuple[VerificationKey, ...]:
    return (
        VerificationKey.hmac(hs_secret, kid="hs"),
        VerificationKey.hmac(hs_secret, algorithm="HS512", kid="hs512"),
        VerificationKey.rsa(public_pem(rsa_key), kid="rs"),
        VerificationKey.rsa(public_pem(rsa_key), algorithm="PS256", kid="ps"),
        VerificationKey.ed25519(public_pem(ed_key), kid="ed"),
    )


def claims(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "tenant": "acme",
        "roles": ["engineer"],
        "clearance": "internal",
        "iat": int(NOW) - 10,
        "exp": int(NOW) + 300,
    }
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def verifier_for(
    keys: tuple[VerificationKey, ...], *, policy: Policy | None = None, **config: Any
) -> JwtVerifier:
    cfg = IdentityConfig(issuer=ISSUER, audience=AUDIENCE, keys=keys, **config)
    return JwtVerifier(cfg, policy=policy, clock=lambda: NOW)


# -- valid tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kid", "alg"),
    [("hs", "HS256"), ("hs512", "HS512"), ("rs", "RS256"), ("ps", "PS256"), ("ed", "EdDSA")],
)
def test_a_valid_token_of_each_algorithm_gives_its_principal(
    kid: str, alg: str, keys: Any, rsa_key: Any, ed_key: Any, hs_secret: bytes
) -> None:
    signing = {"HS": hs_secret, "RS": rsa_key, "PS": rsa_key, "Ed": ed_key}[alg[:2]]
    token = jwt.encode(claims(), signing, algorithm=alg, headers={"kid": kid})
    principal = verifier_for(keys).verify(token)
    assert principal == Principal.of(
        "alice", tenant="acme", roles={"engineer"}, clearance="internal"
    )


def test_the_default_key_verifies_tokens_without_a_kid(ed_key: Any) -> None:
    verifier = verifier_for((VerificationKey.ed25519(public_pem(ed_key)),))
    token = jwt.encode(claims(), ed_key, algorithm="EdDSA")
    assert verifier.verify(token).id == "alice"


def test_bytes_tokens_and_bearer_headers_are_accepted(keys: Any, ed_key: Any) -> None:
    token = jwt.encode(claims(), ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    verifier = verifier_for(keys)
    assert verifier.verify(token.encode("ascii")).id == "alice"
    identity = verifier.authenticate_header(f"Bearer {token}")
    assert identity.principal.id == "alice"
    assert bearer_token(f"bearer   {token} ") == token


@pytest.mark.parametrize("header", [None, "", "Basic dXNlcjpwdw==", "Bearer", "Bearer a b"])
def test_a_missing_or_non_bearer_authorization_is_refused(header: str | None) -> None:
    with pytest.raises(AuthenticationError, match="Bearer <token>"):
        bearer_token(header)


def test_the_audience_may_be_one_of_several_and_a_list_in_the_token(keys: Any, ed_key: Any) -> None:
    verifier = JwtVerifier(
        IdentityConfig(issuer=ISSUER, audience=["other", AUDIENCE], keys=keys),
        clock=lambda: NOW,
    )
    token = jwt.encode(
        claims(aud=["billing", AUDIENCE]), ed_key, algorithm="EdDSA", headers={"kid": "ed"}
    )
    assert verifier.verify(token).id == "alice"


# -- claims mapping ----------------------------------------------------------------------------


def test_claim_paths_reach_nested_objects_and_dotted_keys() -> None:
    data = {
        "realm_access": {"roles": ["a"]},
        "https://example.com/claims": {"roles": ["b"]},
        "plain.dotted": "c",
    }
    assert claim_at(data, "realm_access.roles") == ["a"]
    assert claim_at(data, "https://example.com/claims.roles") == ["b"]
    assert claim_at(data, "plain.dotted") == "c"
    assert claim_at(data, "realm_access.missing") is None
    assert claim_at(data, "plain.dotted.deeper") is None


def test_keycloak_style_claims_map_through_configuration() -> None:
    mapping = ClaimsMapping.from_dict(
        {
            "subject": "preferred_username",
            "tenant": "org.id",
            "roles": "realm_access.roles",
            "clearance": "level",
            "tags": "groups",
            "required": ["tenant", "roles"],
            "role_map": {"kc-admin": ["admin", "auditor"], "kc-dev": "engineer"},
            "clearance_map": {"secret": "restricted"},
        }
    )
    principal = mapping.principal(
        {
            "preferred_username": "bob",
            "org": {"id": "acme"},
            "realm_access": {"roles": ["kc-admin", "kc-dev", "offline_access"]},
            "level": "secret",
            "groups": "ops oncall",
        }
    )
    assert principal == Principal.of(
        "bob",
        tenant="acme",
        roles={"admin", "auditor", "engineer"},
        clearance="restricted",
        tags={"ops", "oncall"},
    )


def test_unmapped_roles_are_dropped_unless_kept() -> None:
    raw = {"sub": "x", "tenant": "t", "roles": "kc-dev stranger"}
    strict = ClaimsMapping(role_map={"kc-dev": ("engineer",)})
    lenient = ClaimsMapping(role_map={"kc-dev": ("engineer",)}, keep_unmapped_roles=True)
    assert strict.principal(raw).roles == {"engineer"}
    assert lenient.principal(raw).roles == {"engineer", "stranger"}


def test_roles_as_a_space_separated_string_like_scope() -> None:
    mapping = ClaimsMapping(roles="scope")
    principal = mapping.principal({"sub": "svc", "tenant": "t", "scope": "read:docs  write:docs"})
    assert principal.roles == {"read:docs", "write:docs"}


def test_missing_optional_claims_take_their_defaults() -> None:
    mapping = ClaimsMapping(
        required=frozenset(),
        default_tenant="solo",
        default_roles=frozenset({"reader"}),
        default_clearance="internal",
    )
    assert mapping.principal({"sub": "x"}) == Principal.of(
        "x", tenant="solo", roles={"reader"}, clearance="internal"
    )


def test_a_claim_turned_off_is_never_read_from_the_token() -> None:
    mapping = ClaimsMapping.from_dict({"tenant": False, "default_tenant": "fixed", "required": []})
    assert mapping.tenant is None
    assert mapping.principal({"sub": "x", "tenant": "evil"}).tenant == "fixed"


def test_the_tenant_is_required_by_default() -> None:
    with pytest.raises(TokenClaimsError, match="missing the required claim 'tenant'"):
        ClaimsMapping().principal({"sub": "x"})


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"required": ["subject"]}, "may name only"),
        ({"tenant": None, "required": ["tenant"]}, "no claim maps it"),
        ({"subject": None}, "cannot be turned off"),
        ({"roles": ""}, "non-empty claim path"),
        ({"colour": "x"}, "unknown claims keys"),
        ({"role_map": {"a": 3}}, "role_map"),
        ({"clearance_map": ["x"]}, "clearance_map"),
        ({"keep_unmapped_roles": "yes"}, "true or false"),
        ({"default_clearance": ""}, "non-empty string"),
    ],
)
def test_bad_claims_configuration_is_a_configuration_error(
    data: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match):
        ClaimsMapping.from_dict(data)


# -- identity: effective roles and maximum clearance ---------------------------------------------


POLICY = Policy.allow_all(
    roles=RoleGraph.from_mapping({"hr-manager": ["hr", "staff"], "hr": ["staff"]}),
    classifications=Classifications(("open", "internal", "secret", "top")),
)


def test_identity_resolves_effective_roles_and_maximum_clearance_once() -> None:
    principal = Principal.of("carol", roles={"hr-manager"}, clearance="internal")
    identity = Identity.resolve(principal, POLICY, {"hr": "secret", "staff": "open"})
    assert identity.roles == {"hr-manager", "hr", "staff"}
    assert identity.clearance == "secret"
    assert identity.principal.clearance == "secret"
    assert identity.principal.roles == {"hr-manager"}


def test_a_role_never_lowers_a_clearance_and_unknown_levels_never_raise_one() -> None:
    principal = Principal.of("dan", roles={"staff"}, clearance="top")
    assert Identity.resolve(principal, POLICY, {"staff": "open"}).clearance == "top"
    unknown = Principal.of("eve", roles={"staff"}, clearance="cosmic")
    assert Identity.resolve(unknown, POLICY, {}).clearance == "cosmic"  # still admits nothing
    assert Identity.resolve(unknown, POLICY, {"staff": "internal"}).clearance == "internal"


def test_authenticate_checks_clearance_against_the_policy_order(keys: Any, ed_key: Any) -> None:
    verifier = verifier_for(
        keys,
        policy=POLICY,
        claims=ClaimsMapping(default_clearance="open"),
        role_clearances={"hr": "secret"},
    )
    token = jwt.encode(
        claims(roles=["hr-manager"], clearance=None),
        ed_key,
        algorithm="EdDSA",
        headers={"kid": "ed"},
    )
    identity = verifier.authenticate(token)
    assert identity.clearance == "secret"
    assert "staff" in identity.roles
    # 'internal' exists in this order, 'confidential' does not.
    bad = jwt.encode(
        claims(clearance="confidential"), ed_key, algorithm="EdDSA", headers={"kid": "ed"}
    )
    with pytest.raises(TokenClaimsError, match="unknown classification") as caught:
        verifier.verify(bad)
    assert "confidential" not in str(caught.value)


def test_configured_levels_must_exist_in_the_policy_order(keys: Any) -> None:
    with pytest.raises(ConfigurationError, match="role_clearances: unknown classification"):
        verifier_for(
            keys,
            policy=POLICY,
            claims=ClaimsMapping(default_clearance="open"),
            role_clearances={"hr": "confidential"},
        )
    with pytest.raises(ConfigurationError, match="default_clearance"):
        verifier_for(keys, policy=POLICY)  # default 'public' is not in this order


async def test_the_workspace_acts_for_the_identity(keys: Any, rsa_key: Any) -> None:
    policy = Policy.allow_all(roles=RoleGraph.from_mapping({"hr-manager": ["hr"]}))
    store = MemoryStore()
    hr = Labels(tenant="acme", classification="confidential", roles=frozenset({"hr"}))
    ws = Workspace(
        [Mount.of("/hr", store, labels=hr), Mount.of("/pub", MemoryStore())],
        policy=policy,
        principal=Principal.of("setup", tenant="acme", roles={"hr"}, clearance="restricted"),
    )
    await ws.write("/hr/pay.md", "salaries")
    verifier = verifier_for(keys, policy=policy, role_clearances={"hr": "confidential"})

    def token(roles: list[str]) -> str:
        return jwt.encode(claims(roles=roles), rsa_key, algorithm="RS256", headers={"kid": "rs"})

    manager = verifier.authenticate(token(["hr-manager"]))
    assert manager.clearance == "confidential"  # the token said internal; the hr role brings more
    assert await manager.bind(ws).read_text("/hr/pay.md") == "salaries"

    engineer = verifier.authenticate(token(["engineer"]))
    with pytest.raises(NotFoundError):
        await engineer.bind(ws).read_text("/hr/pay.md")


# -- configuration -------------------------------------------------------------------------------


def test_config_from_dict_with_files_environment_and_claims(
    tmp_path: Path, rsa_key: Any, ed_key: Any, hs_secret: bytes
) -> None:
    (tmp_path / "rs.pem").write_bytes(public_pem(rsa_key))
    config = IdentityConfig.from_dict(
        {
            "issuer": ISSUER,
            "audience": [AUDIENCE, "cli"],
            "leeway_seconds": 30,
            "max_token_bytes": 4096,
            "required_claims": ["exp", "iat"],
            "keys": [
                {"kid": "rs", "algorithm": "RS256", "pem_file": "rs.pem"},
                {"kid": "ed", "algorithm": "EdDSA", "pem": public_pem(ed_key).decode()},
                {"kid": "hs", "algorithm": "HS256", "secret_env": "IDP_SECRET"},
            ],
            "claims": {"roles": "realm_access.roles"},
            "role_clearances": {"hr": "confidential"},
        },
        base_dir=tmp_path,
        environ={"IDP_SECRET": base64.b64encode(hs_secret).decode()},
    )
    assert config.audience == (AUDIENCE, "cli")
    assert config.allowed_algorithms == {"RS256", "EdDSA", "HS256"}
    assert config.leeway_seconds == 30
    assert config.claims.roles == "realm_access.roles"
    assert config.role_clearances == {"hr": "confidential"}
    token = jwt.encode(
        claims(realm_access={"roles": ["x"]}, roles=None),
        rsa_key,
        algorithm="RS256",
        headers={"kid": "rs"},
    )
    assert JwtVerifier(config, clock=lambda: NOW).verify(token).roles == {"x"}


def test_config_from_toml_and_yaml_files(tmp_path: Path, ed_key: Any) -> None:
    (tmp_path / "ed.pem").write_bytes(public_pem(ed_key))
    (tmp_path / "bastion.toml").write_text(
        f"""
[identity]
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
algorithms = ["EdDSA"]

[[identity.keys]]
algorithm = "EdDSA"
pem_file = "ed.pem"

[identity.claims]
roles = "scope"
""",
        encoding="utf-8",
    )
    (tmp_path / "identity.yaml").write_text(
        f"""
issuer: {ISSUER}
audience: {AUDIENCE}
keys:
  - algorithm: EdDSA
    pem_file: ed.pem
claims:
  roles: scope
  tenant: null
  required: []
""",
        encoding="utf-8",
    )
    token = jwt.encode(claims(roles=None, scope="read"), ed_key, algorithm="EdDSA")
    from_toml = IdentityConfig.from_file(tmp_path / "bastion.toml")
    from_yaml = IdentityConfig.from_file(tmp_path / "identity.yaml")
    assert JwtVerifier(from_toml, clock=lambda: NOW).verify(token).roles == {"read"}
    principal = JwtVerifier(from_yaml, clock=lambda: NOW).verify(token)
    assert principal.tenant == "default"  # tenant not read from tokens in the YAML file


def test_a_broken_yaml_file_is_refused_without_quoting_its_secret(tmp_path: Path) -> None:
    # YAML errors quote the offending line; an inline secret there must not reach the message.
    path = tmp_path / "identity.yaml"
    path.write_text("keys:\n  - algorithm: HS256\n    secret: s3cr3t-value: [\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"line 3, column \d+") as caught:
        IdentityConfig.from_file(path)
    assert "s3cr3t" not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is None


def _base(ed_pem: str) -> dict[str, Any]:
    return {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "keys": [{"algorithm": "EdDSA", "pem": ed_pem}],
    }


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"algorithms": ["EdDSA", "none"]}, "never contain 'none'"),
        ({"algorithms": ["EdDSA", "NONE"]}, "never contain 'none'"),
        ({"algorithms": ["ES256"]}, "unsupported algorithms"),
        ({"algorithms": ["RS256"]}, "does not include"),
        ({"leeway_seconds": 3600}, "leeway_seconds"),
        ({"leeway_seconds": -1}, "leeway_seconds"),
        ({"max_token_bytes": 10}, "max_token_bytes"),
        ({"issuer": []}, "non-empty 'issuer'"),
        ({"audience": 7}, "audience"),
        ({"keys": []}, "at least one key"),
        ({"colour": "x"}, "unknown identity keys"),
        ({"role_clearances": {"hr": 3}}, "role_clearances"),
    ],
)
def test_bad_identity_configuration_is_refused_at_load(
    change: dict[str, Any], match: str, ed_key: Any
) -> None:
    data = _base(public_pem(ed_key).decode()) | change
    with pytest.raises(ConfigurationError, match=match):
        IdentityConfig.from_dict(data)


def test_missing_issuer_or_audience_is_refused(ed_key: Any) -> None:
    for name in ("issuer", "audience", "keys"):
        data = _base(public_pem(ed_key).decode())
        del data[name]
        with pytest.raises(ConfigurationError, match=f"needs '{name}'"):
            IdentityConfig.from_dict(data)


def test_keys_need_distinct_ids_and_at_most_one_default(ed_key: Any, hs_secret: bytes) -> None:
    ed = VerificationKey.ed25519(public_pem(ed_key))
    hs = VerificationKey.hmac(hs_secret)
    with pytest.raises(ConfigurationError, match="at most one key may have no 'kid'"):
        IdentityConfig(issuer=ISSUER, audience=AUDIENCE, keys=(ed, hs))
    a = VerificationKey.hmac(hs_secret, kid="k")
    b = VerificationKey.ed25519(public_pem(ed_key), kid="k")
    with pytest.raises(ConfigurationError, match="repeated key ids: k"):
        IdentityConfig(issuer=ISSUER, audience=AUDIENCE, keys=(a, b))


def test_key_material_is_checked_when_keys_are_built(rsa_key: Any, ed_key: Any) -> None:
    rsa_pem, ed_pem = public_pem(rsa_key), public_pem(ed_key)
    with pytest.raises(ConfigurationError, match="at least 32 bytes"):
        VerificationKey.hmac(b"short")
    with pytest.raises(ConfigurationError, match="must not be a PEM"):
        VerificationKey.hmac(rsa_pem)
    with pytest.raises(ConfigurationError, match="needs an RSA public key"):
        VerificationKey.rsa(ed_pem)
    with pytest.raises(ConfigurationError, match="needs an Ed25519 public key"):
        VerificationKey.ed25519(rsa_pem)
    private = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(ConfigurationError, match="not the private key"):
        VerificationKey.rsa(private)
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(ConfigurationError, match="at least 2048 bits"):
        VerificationKey.rsa(public_pem(small))
    with pytest.raises(ConfigurationError, match="not a PEM public key"):
        VerificationKey.rsa("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
    with pytest.raises(ConfigurationError, match="RS256 keys take pem or pem_file"):
        VerificationKey.from_dict({"algorithm": "RS256", "secret": "x" * 40})
    with pytest.raises(ConfigurationError, match="HS256 keys take secret"):
        VerificationKey.from_dict({"algorithm": "HS256", "pem": rsa_pem.decode()})
    with pytest.raises(ConfigurationError, match="environment variable NOPE is not set"):
        VerificationKey.from_dict({"algorithm": "HS256", "secret_env": "NOPE"}, environ={})


def test_a_key_repr_never_shows_its_secret(hs_secret: bytes) -> None:
    key = VerificationKey.hmac(hs_secret, kid="k1")
    assert repr(key) == "VerificationKey(algorithm='HS256', kid='k1')"


def test_authentication_errors_are_operation_errors() -> None:
    assert issubclass(AuthenticationError, OperationError)
    assert issubclass(TokenClaimsError, AuthenticationError)
