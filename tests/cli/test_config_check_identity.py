"""``bastion config check`` meets what ``[identity]`` names now, not at the first token: each
key's file or secret (exists, readable, parses), the client secret's variable, and the identity
provider, reached once on loopback (a real HTTP server) with a short timeout. Each problem is one
line naming its place, beside the file's other problems."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cli_support import Run, error_of
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from bastion.config import identity_check

_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PUBLIC_PEM = _KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
PRIVATE_PEM = _KEY.private_bytes(
    serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption(),
)
RSA_JWK = {**json.loads(RSAAlgorithm.to_jwk(_KEY.public_key())), "kid": "k1", "alg": "RS256"}


class Provider(BaseHTTPRequestHandler):
    """An OpenID provider's two documents, as the test sets them (``answers``: path -> JSON
    or an HTTP status); ``delay`` seconds before answering."""

    answers: ClassVar[dict[str, Any]] = {}
    delay: ClassVar[float] = 0.0

    def do_GET(self) -> None:
        # the checker may have given up waiting (the timeout test): nothing left to answer
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._answer()

    def _answer(self) -> None:
        time.sleep(self.delay)
        answer = self.answers.get(self.path, 404)
        if isinstance(answer, int):
            self.send_response(answer)
            self.end_headers()
            return
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[str]:
    """A provider on loopback: its issuer URL; its answers are set per test."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    server.daemon_threads = True
    issuer = f"http://127.0.0.1:{server.server_address[1]}"
    Provider.delay = 0.0
    Provider.answers = {
        "/.well-known/openid-configuration": {"issuer": issuer, "jwks_uri": issuer + "/keys"},
        "/keys": {"keys": [RSA_JWK]},
    }
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield issuer
    server.shutdown()
    server.server_close()
    thread.join()


def _identity(starter: Path, table: str) -> None:
    config = starter / "bastion.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n" + table, encoding="utf-8")


def _problems(run: Run) -> list[str]:
    result = run("config", "check", "--json")
    assert result.exit_code == 1, result.output
    assert error_of(result)["error"] == "configuration"
    data = json.loads(result.stdout)
    assert data["valid"] is False
    assert all("\n" not in p for p in data["problems"])
    problems: list[str] = data["problems"]
    return problems


def test_a_provider_that_answers_passes(starter: Path, run: Run, provider: str) -> None:
    _identity(
        starter, f'[identity]\nissuer = "{provider}"\naudience = "bastion"\ndiscovery = true\n'
    )
    result = run("config", "check")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("bastion.toml: valid")


def test_an_unreachable_provider_is_one_line_beside_the_other_problems(
    starter: Path, run: Run, provider: str
) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, then let go
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    _identity(
        starter,
        f'[[mounts]]\nprefix = "/gone"\nurl = "file:no-such-folder"\n\n'
        f'[identity]\nissuer = "{closed}"\naudience = "bastion"\ndiscovery = true\n',
    )
    problems = _problems(run)
    assert len(problems) == 2
    assert problems[0].startswith("mount /gone")
    assert problems[1] == (
        f"identity discovery: {closed}/.well-known/openid-configuration cannot be reached"
        " (ConnectError)"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"/.well-known/openid-configuration": {"issuer": "https://other.example"}},
            "identity discovery: the identity provider's discovery document names another issuer",
        ),
        ({"/keys": 500}, "identity discovery: {issuer}/keys answered HTTP 500"),
        (
            {"/keys": {"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}},
            "identity discovery: the provider's key set holds no RSA or Ed25519 signing key",
        ),
        (
            {"/keys": ["not", "an", "object"]},
            "identity discovery: {issuer}/keys did not answer a JSON object",
        ),
    ],
)
def test_a_provider_that_answers_wrongly_is_named(
    starter: Path, run: Run, provider: str, change: dict[str, Any], expected: str
) -> None:
    Provider.answers.update(change)
    _identity(
        starter, f'[identity]\nissuer = "{provider}"\naudience = "bastion"\ndiscovery = true\n'
    )
    assert _problems(run) == [expected.format(issuer=provider)]


def test_a_jwks_url_is_fetched_too(starter: Path, run: Run, provider: str) -> None:
    _identity(
        starter,
        f'[identity]\nissuer = "{provider}"\naudience = "bastion"\n'
        f'jwks_url = "{provider}/missing"\n',
    )
    assert _problems(run) == [f"identity jwks_url: {provider}/missing answered HTTP 404"]


def test_a_provider_that_does_not_answer_times_out(
    starter: Path, run: Run, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(identity_check, "PROVIDER_TIMEOUT", 0.2)
    Provider.delay = 2.0
    _identity(
        starter, f'[identity]\nissuer = "{provider}"\naudience = "bastion"\ndiscovery = true\n'
    )
    assert _problems(run) == [
        f"identity discovery: {provider}/.well-known/openid-configuration did not answer"
        " within 0.2 s"
    ]


def test_every_bad_key_file_and_secret_is_its_own_problem(
    starter: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_SECRET", raising=False)
    monkeypatch.delenv("NO_CLIENT_SECRET", raising=False)
    keys = starter / "keys"
    keys.mkdir()
    (keys / "good.pem").write_bytes(PUBLIC_PEM)
    (keys / "private.pem").write_bytes(PRIVATE_PEM)
    (keys / "garbage.pem").write_text("not a key\n", encoding="utf-8")
    _identity(
        starter,
        '[identity]\nissuer = "https://id.example"\naudience = "bastion"\n\n'
        '[[identity.keys]]\nkid = "good"\nalgorithm = "RS256"\npem_file = "keys/good.pem"\n\n'
        '[[identity.keys]]\nkid = "gone"\nalgorithm = "RS256"\npem_file = "keys/gone.pem"\n\n'
        '[[identity.keys]]\nkid = "priv"\nalgorithm = "RS256"\npem_file = "keys/private.pem"\n\n'
        '[[identity.keys]]\nkid = "junk"\nalgorithm = "RS256"\npem_file = "keys/garbage.pem"\n\n'
        '[[identity.keys]]\nkid = "dir"\nalgorithm = "HS256"\nsecret_file = "keys"\n\n'
        '[[identity.keys]]\nkid = "env"\nalgorithm = "HS256"\nsecret_env = "NO_SUCH_SECRET"\n',
    )
    problems = _problems(run)
    assert len(problems) == 5, problems
    gone, private, junk, folder, env = problems
    assert gone.startswith("identity: key 'gone': cannot read ") and "gone.pem" in gone
    assert private.startswith("identity: key 'priv': give the public key, not the private key")
    assert junk.startswith("identity: key 'junk': ")
    assert folder.startswith("identity: key 'dir': cannot read ")
    assert env == "identity: key 'env': environment variable NO_SUCH_SECRET is not set"
    assert "PRIVATE KEY" not in json.dumps(problems)  # no key material in a problem


def test_an_unset_client_secret_is_named(starter: Path, run: Run, provider: str) -> None:
    _identity(
        starter,
        f'[identity]\nissuer = "{provider}"\naudience = "bastion"\ndiscovery = true\n'
        'client_id = "bastion"\nclient_secret_env = "NO_CLIENT_SECRET_HERE"\n',
    )
    assert _problems(run) == [
        "identity client_secret_env: environment variable NO_CLIENT_SECRET_HERE is not set"
    ]
