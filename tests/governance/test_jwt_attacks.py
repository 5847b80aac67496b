"""Attacks on the JWT verifier: each refusal class as its own test, with the variants that have
broken real verifiers (algorithm confusion, ``none`` spellings, parser differentials, key
injection through headers, size and nesting bombs).

Every refusal is checked the same way (:func:`refused`): the right error class, a one-line
message that says what to do, and no part of the token or of its claims' values in it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt_keys import public_pem

from bastion.governance.errors import (
    AuthenticationError,
    MalformedTokenError,
    TokenAlgorithmError,
    TokenAudienceError,
    TokenClaimsError,
    TokenExpiredError,
    TokenHeaderError,
    TokenIssuerError,
    TokenNotYetValidError,
    TokenSignatureError,
    UnknownKeyError,
)
from bastion.governance.identity import (
    ClaimsMapping,
    IdentityConfig,
    JwtVerifier,
    VerificationKey,
)

NOW = 1_800_000_000
ISSUER = "https://id.example.test"
AUDIENCE = "bastion"
SECRET_SUB = "mallory-7f3a"
"""A subject value that must never appear in an error message."""


@pytest.fixture(scope="module")
def attacker_rsa() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def verifier(rsa_key: Any, ed_key: Any, hs_secret: bytes) -> JwtVerifier:
    """Three keys of three algorithms, selected by kid; the RSA key is also the default."""
    config = IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(
            VerificationKey.rsa(public_pem(rsa_key)),
            VerificationKey.rsa(public_pem(rsa_key), kid="rs"),
            VerificationKey.ed25519(public_pem(ed_key), kid="ed"),
            VerificationKey.hmac(hs_secret, kid="hs"),
        ),
        claims=ClaimsMapping(required=frozenset({"tenant", "roles"})),
    )
    return JwtVerifier(config, clock=lambda: NOW)


def claims(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": SECRET_SUB,
        "tenant": "acme",
        "roles": ["engineer"],
        "iat": NOW - 10,
        "exp": NOW + 300,
    }
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def segment(value: Any) -> str:
    return b64(value if isinstance(value, bytes) else json.dumps(value).encode())


def forge(header: Any, payload: Any, sign: Callable[[bytes], bytes] | None = None) -> str:
    """A compact token assembled by hand, signed by ``sign`` (or with an empty signature)."""
    signing_input = f"{segment(header)}.{segment(payload)}"
    signature = sign(signing_input.encode("ascii")) if sign is not None else b""
    return f"{signing_input}.{b64(signature)}"


def hs256(secret: bytes) -> Callable[[bytes], bytes]:
    return lambda data: hmac.new(secret, data, hashlib.sha256).digest()


def refused(
    verifier: JwtVerifier, token: Any, error: type[AuthenticationError], match: str
) -> AuthenticationError:
    """Verify ``token`` expecting ``error``; check the message leaks nothing and is one line."""
    with pytest.raises(error, match=match) as caught:
        verifier.verify(token)
    message = str(caught.value)
    assert "\n" not in message
    assert ":" in message  # what failed: what to do
    assert SECRET_SUB not in message
    if isinstance(token, str):
        for part in token.split("."):
            if len(part) >= 8:
                assert part not in message
    return caught.value


def test_the_fixture_token_is_valid(verifier: JwtVerifier, rsa_key: Any) -> None:
    """The baseline every attack below starts from is accepted."""
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    assert verifier.verify(token).id == SECRET_SUB


# -- alg: none -------------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ["none", "None", "NONE", "nOnE", " none "])
@pytest.mark.parametrize("kid", [None, "rs"])
def test_alg_none_in_any_spelling_is_refused(
    verifier: JwtVerifier, alg: str, kid: str | None
) -> None:
    header = {"alg": alg, "typ": "JWT"} | ({"kid": kid} if kid else {})
    token = forge(header, claims())
    refused(verifier, token, TokenAlgorithmError, "token algorithm 'none' is not allowed")
    with_signature = forge(header, claims(), lambda data: b"x" * 32)
    refused(verifier, with_signature, TokenAlgorithmError, "'none' is not allowed")


# -- algorithm confusion -----------------------------------------------------------------------


@pytest.mark.parametrize("kid", [None, "rs"])
def test_hs256_forged_with_the_rsa_public_key_as_secret_is_refused(
    verifier: JwtVerifier, rsa_key: Any, kid: str | None
) -> None:
    """The classic confusion: sign HS256 with the public PEM, hoping it is used as a secret."""
    header = {"alg": "HS256", "typ": "JWT"} | ({"kid": kid} if kid else {})
    for public in (public_pem(rsa_key), public_pem(rsa_key).strip()):
        token = forge(header, claims(roles=["admin"]), hs256(public))
        refused(verifier, token, TokenAlgorithmError, "does not match the algorithm of its key")


def test_hs256_forged_with_the_ed25519_public_key_is_refused(
    verifier: JwtVerifier, ed_key: Any
) -> None:
    token = forge({"alg": "HS256", "kid": "ed"}, claims(), hs256(public_pem(ed_key)))
    refused(verifier, token, TokenAlgorithmError, "does not match")
    raw = ed_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    refused(
        verifier,
        forge({"alg": "HS256", "kid": "ed"}, claims(), hs256(raw)),
        TokenAlgorithmError,
        "does not match",
    )


@pytest.mark.parametrize(
    ("kid", "alg"),
    [("ed", "RS256"), ("rs", "EdDSA"), ("hs", "RS256"), ("rs", "PS256"), ("hs", "HS512")],
)
def test_a_kid_pointing_to_a_key_of_another_algorithm_is_refused(
    verifier: JwtVerifier, rsa_key: Any, ed_key: Any, hs_secret: bytes, kid: str, alg: str
) -> None:
    """Correctly signed for the header's algorithm, but the kid picks a key bound to another."""
    signing = {"RS": rsa_key, "PS": rsa_key, "Ed": ed_key, "HS": hs_secret + hs_secret}[alg[:2]]
    if alg == "HS512":
        token = forge(
            {"alg": alg, "kid": kid},
            claims(),
            lambda d: hmac.new(hs_secret, d, hashlib.sha512).digest(),
        )
    else:
        token = jwt.encode(claims(), signing, algorithm=alg, headers={"kid": kid})
    refused(verifier, token, TokenAlgorithmError, "algorithm")


@pytest.mark.parametrize("alg", ["ES256", "RS512", "HS384"])
def test_an_algorithm_off_the_allowlist_is_refused_and_named(
    verifier: JwtVerifier, alg: str
) -> None:
    token = forge({"alg": alg, "kid": "rs"}, claims(), lambda d: b"s" * 64)
    refused(verifier, token, TokenAlgorithmError, f"token algorithm '{alg}' is not allowed")


def test_an_unrecognized_algorithm_is_not_repeated_in_the_message(verifier: JwtVerifier) -> None:
    token = forge({"alg": "RS256\u202e<script>", "kid": "rs"}, claims(), lambda d: b"s" * 64)
    error = refused(verifier, token, TokenAlgorithmError, r"\(unrecognized\) is not allowed")
    assert "script" not in str(error)


def test_a_missing_or_non_string_alg_is_malformed(verifier: JwtVerifier) -> None:
    for header in ({"typ": "JWT"}, {"alg": ["RS256"]}, {"alg": ""}, {"alg": None}):
        refused(
            verifier,
            forge(header, claims(), lambda d: b"s" * 64),
            MalformedTokenError,
            "names no algorithm",
        )


# -- signatures --------------------------------------------------------------------------------


def test_a_tampered_signature_is_refused(verifier: JwtVerifier, rsa_key: Any) -> None:
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    head, body, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[10] ^= 0x01
    refused(
        verifier, f"{head}.{body}.{b64(bytes(raw))}", TokenSignatureError, "token signature invalid"
    )


def test_a_tampered_payload_is_refused(verifier: JwtVerifier, ed_key: Any) -> None:
    token = jwt.encode(claims(), ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    head, _, signature = token.split(".")
    promoted = segment(claims(roles=["admin"]))
    refused(verifier, f"{head}.{promoted}.{signature}", TokenSignatureError, "signature invalid")


def test_a_token_signed_by_another_key_with_our_kid_is_refused(
    verifier: JwtVerifier, attacker_rsa: Any
) -> None:
    token = jwt.encode(claims(), attacker_rsa, algorithm="RS256", headers={"kid": "rs"})
    refused(verifier, token, TokenSignatureError, "signature invalid")


@pytest.mark.parametrize("kid", ["rs", "hs", "ed"])
def test_an_empty_signature_is_refused(verifier: JwtVerifier, kid: str) -> None:
    alg = {"rs": "RS256", "hs": "HS256", "ed": "EdDSA"}[kid]
    refused(
        verifier,
        forge({"alg": alg, "kid": kid}, claims()),
        TokenSignatureError,
        "signature invalid",
    )


def test_a_non_canonical_signature_encoding_is_refused(verifier: JwtVerifier, rsa_key: Any) -> None:
    """The last base64url character of a 256-byte signature carries 4 unused bits; setting
    them gives a second spelling of the same signature, which must not verify."""
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    head, body, signature = token.split(".")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    twin = alphabet[alphabet.index(signature[-1]) | 0b1111]
    assert twin != signature[-1]
    refused(
        verifier,
        f"{head}.{body}.{signature[:-1]}{twin}",
        MalformedTokenError,
        "not a well-formed JWT",
    )


def test_the_hs_secret_key_verifies_only_hs256(verifier: JwtVerifier, hs_secret: bytes) -> None:
    good = jwt.encode(claims(), hs_secret, algorithm="HS256", headers={"kid": "hs"})
    assert verifier.verify(good).tenant == "acme"
    wrong_secret = forge({"alg": "HS256", "kid": "hs"}, claims(), hs256(b"guess" * 8))
    refused(verifier, wrong_secret, TokenSignatureError, "signature invalid")


# -- keys from headers are never used or fetched -----------------------------------------------


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []  # noqa: RUF012  (a per-test copy is made in the fixture)

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"keys": []}')

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def key_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on loopback that records every request it gets."""
    hits: list[str] = []
    handler = type("Recorder", (_Recorder,), {"hits": hits})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_jku_and_x5u_headers_are_never_fetched(
    verifier: JwtVerifier, rsa_key: Any, attacker_rsa: Any, key_server: tuple[str, list[str]]
) -> None:
    url, hits = key_server
    headers = {"kid": "rs", "jku": f"{url}/jwks.json", "x5u": f"{url}/cert.pem"}
    forged = jwt.encode(claims(), attacker_rsa, algorithm="RS256", headers=headers)
    refused(verifier, forged, TokenSignatureError, "signature invalid")
    genuine = jwt.encode(claims(), rsa_key, algorithm="RS256", headers=headers)
    assert verifier.verify(genuine).id == SECRET_SUB  # the headers are simply ignored
    assert hits == []


def test_an_embedded_jwk_or_x5c_key_is_ignored(verifier: JwtVerifier, attacker_rsa: Any) -> None:
    public = attacker_rsa.public_key().public_numbers()
    jwk = {
        "kty": "RSA",
        "n": b64(public.n.to_bytes(256, "big")),
        "e": b64(public.e.to_bytes(3, "big")),
    }
    token = jwt.encode(
        claims(), attacker_rsa, algorithm="RS256", headers={"jwk": jwk, "x5c": ["MIIB"]}
    )
    refused(verifier, token, TokenSignatureError, "signature invalid")


# -- kid ---------------------------------------------------------------------------------------


def test_an_unknown_kid_is_refused_without_falling_back(
    verifier: JwtVerifier, rsa_key: Any
) -> None:
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rotated-away"})
    error = refused(verifier, token, UnknownKeyError, "names no trusted key")
    assert "rotated-away" not in str(error)


@pytest.mark.parametrize("kid", [7, ["rs"], "", "k" * 300])
def test_a_malformed_kid_is_refused(verifier: JwtVerifier, rsa_key: Any, kid: Any) -> None:
    token = forge({"alg": "RS256", "kid": kid}, claims(), lambda d: b"s" * 256)
    refused(verifier, token, MalformedTokenError, "key id")


def test_no_kid_and_no_default_key_is_refused(ed_key: Any) -> None:
    config = IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(VerificationKey.ed25519(public_pem(ed_key), kid="ed"),),
    )
    verifier = JwtVerifier(config, clock=lambda: NOW)
    token = jwt.encode(claims(), ed_key, algorithm="EdDSA")
    refused(verifier, token, UnknownKeyError, "no default key")


# -- headers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("crit", [["exp"], ["b64"], [], "b64"])
def test_crit_headers_are_refused(verifier: JwtVerifier, rsa_key: Any, crit: Any) -> None:
    token = jwt.encode(
        claims(), rsa_key, algorithm="RS256", headers={"kid": "rs", "crit": crit, "exp": NOW}
    )
    refused(verifier, token, TokenHeaderError, "'crit'")


def test_an_unencoded_payload_b64_false_is_refused(verifier: JwtVerifier, hs_secret: bytes) -> None:
    header = {"alg": "HS256", "kid": "hs", "b64": False, "crit": ["b64"]}
    token = forge(header, b"", hs256(hs_secret))
    refused(verifier, token, TokenHeaderError, "'crit'")


def test_repeated_header_members_are_refused(verifier: JwtVerifier, hs_secret: bytes) -> None:
    """Two ``alg`` members: one parser may read the first, another the last."""
    header = b'{"alg":"none","alg":"HS256","kid":"hs"}'
    token = forge(header, claims(), hs256(hs_secret))
    refused(verifier, token, MalformedTokenError, "not a well-formed JWT")


def test_repeated_claims_are_refused(verifier: JwtVerifier, hs_secret: bytes) -> None:
    payload = json.dumps(claims())[:-1] + ', "roles": ["admin"]}'
    token = forge({"alg": "HS256", "kid": "hs"}, payload.encode(), hs256(hs_secret))
    refused(verifier, token, MalformedTokenError, "not a well-formed JWT")


# -- time --------------------------------------------------------------------------------------


def test_an_expired_token_is_refused(verifier: JwtVerifier, rsa_key: Any) -> None:
    token = jwt.encode(claims(exp=NOW - 3600), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    refused(verifier, token, TokenExpiredError, "^token expired: sign in again$")


@pytest.mark.parametrize(("offset", "valid"), [(-59, True), (-60, False), (-61, False)])
def test_exp_just_inside_and_just_outside_the_leeway(
    verifier: JwtVerifier, rsa_key: Any, offset: int, valid: bool
) -> None:
    """Leeway is 60 s: a token that expired 59 s ago is still accepted, 60 s ago it is not."""
    token = jwt.encode(claims(exp=NOW + offset), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    if valid:
        assert verifier.verify(token).id == SECRET_SUB
    else:
        refused(verifier, token, TokenExpiredError, "token expired")


@pytest.mark.parametrize(("offset", "valid"), [(59, True), (60, True), (61, False), (3600, False)])
def test_nbf_in_the_future(verifier: JwtVerifier, rsa_key: Any, offset: int, valid: bool) -> None:
    token = jwt.encode(claims(nbf=NOW + offset), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    if valid:
        assert verifier.verify(token).id == SECRET_SUB
    else:
        refused(verifier, token, TokenNotYetValidError, "not valid yet")


def test_iat_in_the_future_is_refused(verifier: JwtVerifier, rsa_key: Any) -> None:
    token = jwt.encode(claims(iat=NOW + 600), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    refused(verifier, token, TokenNotYetValidError, "issued in the future")


def test_a_zero_leeway_is_exact(rsa_key: Any) -> None:
    config = IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(VerificationKey.rsa(public_pem(rsa_key)),),
        leeway_seconds=0,
    )
    verifier = JwtVerifier(config, clock=lambda: NOW)
    assert verifier.verify(jwt.encode(claims(exp=NOW + 1), rsa_key, algorithm="RS256"))
    refused(
        verifier,
        jwt.encode(claims(exp=NOW), rsa_key, algorithm="RS256"),
        TokenExpiredError,
        "expired",
    )


@pytest.mark.parametrize("exp", ["1800000300", True, [NOW], {"t": NOW}])
def test_time_claims_of_the_wrong_type_are_refused(
    verifier: JwtVerifier, rsa_key: Any, exp: Any
) -> None:
    token = jwt.encode(claims(exp=exp), rsa_key, algorithm="RS256", headers={"kid": "rs"})
    refused(verifier, token, TokenClaimsError, "'exp' has the wrong type")


@pytest.mark.parametrize("value", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_numbers_are_refused(
    verifier: JwtVerifier, hs_secret: bytes, value: bytes
) -> None:
    payload = json.dumps(claims(exp=0)).encode().replace(b'"exp": 0', b'"exp": ' + value)
    token = forge({"alg": "HS256", "kid": "hs"}, payload, hs256(hs_secret))
    refused(verifier, token, MalformedTokenError, "not a well-formed JWT")


def test_an_exp_too_large_to_be_finite_is_refused(verifier: JwtVerifier, hs_secret: bytes) -> None:
    payload = json.dumps(claims(exp=0)).encode().replace(b'"exp": 0', b'"exp": 1e400')
    token = forge({"alg": "HS256", "kid": "hs"}, payload, hs256(hs_secret))
    refused(verifier, token, TokenClaimsError, "not a finite number")


# -- issuer and audience -----------------------------------------------------------------------


@pytest.mark.parametrize("iss", ["https://evil.example", "https://id.example.test/", 42])
def test_a_wrong_issuer_is_refused(verifier: JwtVerifier, ed_key: Any, iss: Any) -> None:
    token = forge({"alg": "EdDSA", "kid": "ed"}, claims(iss=iss), ed_key.sign)
    refused(verifier, token, TokenIssuerError, "issuer is not trusted")


@pytest.mark.parametrize("aud", ["other-service", ["a", "b"], "BASTION", [AUDIENCE + " "], 5])
def test_a_wrong_audience_is_refused(verifier: JwtVerifier, ed_key: Any, aud: Any) -> None:
    token = forge({"alg": "EdDSA", "kid": "ed"}, claims(aud=aud), ed_key.sign)
    refused(verifier, token, TokenAudienceError, "audience does not name this service")


@pytest.mark.parametrize("name", ["iss", "aud", "exp"])
def test_missing_registered_claims_are_refused(
    verifier: JwtVerifier, ed_key: Any, name: str
) -> None:
    payload = claims()
    del payload[name]
    token = jwt.encode(payload, ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    refused(verifier, token, TokenClaimsError, f"missing the required claim '{name}'")


# -- mapped claims -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sub", "tenant", "roles"])
def test_missing_mapped_claims_are_refused(verifier: JwtVerifier, ed_key: Any, name: str) -> None:
    token = jwt.encode(claims(**{name: None}), ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    refused(verifier, token, TokenClaimsError, f"missing the required claim '{name}'")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"roles": 7}, "'roles' has the wrong type"),
        ({"roles": ["ok", 7]}, "'roles' has the wrong type"),
        ({"roles": {"admin": True}}, "'roles' has the wrong type"),
        ({"tenant": ["acme"]}, "'tenant' has the wrong type"),
        ({"tenant": ""}, "'tenant' has the wrong type"),
        ({"clearance": 3}, "'clearance' has the wrong type"),
        ({"clearance": "cosmic-top-secret"}, "unknown classification"),
        ({"sub": 12345}, "'sub' must be a string"),
        ({"sub": ""}, "'sub' must be a non-empty string"),
        ({"jti": 9}, "'jti' must be a string"),
    ],
)
def test_claims_of_the_wrong_type_are_refused(
    verifier: JwtVerifier, ed_key: Any, change: dict[str, Any], match: str
) -> None:
    token = jwt.encode(claims(**change), ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    error = refused(verifier, token, TokenClaimsError, match)
    assert "cosmic" not in str(error)


# -- size, shape and garbage -------------------------------------------------------------------


def test_a_token_over_the_size_cap_is_refused_before_decoding(
    verifier: JwtVerifier, ed_key: Any
) -> None:
    big = jwt.encode(claims(pad="x" * 9000), ed_key, algorithm="EdDSA", headers={"kid": "ed"})
    assert len(big) > 8192
    refused(verifier, big, MalformedTokenError, "longer than 8192 bytes")
    refused(verifier, "A" * 10_000_000, MalformedTokenError, "longer than 8192 bytes")


def test_the_size_cap_is_configurable(ed_key: Any) -> None:
    config = IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(VerificationKey.ed25519(public_pem(ed_key)),),
        max_token_bytes=512,
        claims=ClaimsMapping(required=frozenset()),
    )
    verifier = JwtVerifier(config, clock=lambda: NOW)
    small = jwt.encode(claims(), ed_key, algorithm="EdDSA")
    assert len(small) <= 512
    assert verifier.verify(small).id == SECRET_SUB
    padded = jwt.encode(claims(pad="x" * 400), ed_key, algorithm="EdDSA")
    refused(verifier, padded, MalformedTokenError, "longer than 512 bytes")


def test_deeply_nested_claims_are_refused(verifier: JwtVerifier, hs_secret: bytes) -> None:
    payload = b'{"sub": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    token = forge({"alg": "HS256", "kid": "hs"}, payload, hs256(hs_secret))
    assert len(token) < 20000
    config = IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(VerificationKey.hmac(hs_secret, kid="hs"),),
        max_token_bytes=65536,
    )
    refused(JwtVerifier(config, clock=lambda: NOW), token, MalformedTokenError, "well-formed")


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "not a token",
        "abc",
        "a.b",
        "a.b.c.d",
        "eyJhbGciOiJSUzI1NiJ9.e30.c2ln.x.y",  # five parts: a JWE, not a JWS
        "....",
        "eyJhbGciOiJIUzI1NiJ9..c2ln",  # empty payload
        ".e30.c2ln",  # empty header
        "eyJhbGciOiJIUzI1NiJ9=.e30.c2ln",  # padding
        "eyJhbGciOiJIUzI1NiJ9.e30.c2l+",  # standard, not url-safe, base64
        "eyJhbGciOiJIUzI1NiJ9 .e30.c2ln",
        "ey\u00e9.e30.c2ln",
        "Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln",
    ],
)
def test_garbage_is_refused_as_malformed(verifier: JwtVerifier, garbage: str) -> None:
    refused(verifier, garbage, MalformedTokenError, "JWT")


@pytest.mark.parametrize(
    ("header", "payload"),
    [
        (b"not json", b"{}"),
        (b"[1, 2]", b"{}"),
        (b'"RS256"', b"{}"),
        (b"\xff\xfe", b"{}"),
        (None, b"[]"),
        (None, b"null"),
        (None, b"{"),
    ],
)
def test_headers_and_payloads_that_are_not_json_objects_are_refused(
    verifier: JwtVerifier, hs_secret: bytes, header: bytes | None, payload: bytes
) -> None:
    head = header if header is not None else {"alg": "HS256", "kid": "hs"}
    refused(verifier, forge(head, payload, hs256(hs_secret)), MalformedTokenError, "well-formed")


@pytest.mark.parametrize("token", [None, 42, ["a.b.c"], b"\xff.\xfe.\xfd"])
def test_tokens_that_are_not_text_are_refused(verifier: JwtVerifier, token: Any) -> None:
    with pytest.raises(MalformedTokenError, match="well-formed JWT"):
        verifier.verify(token)
