"""`bastion ask`, run in-process with click's runner over an index built by `bastion index`;
the chat-model path against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bastion.cli import main

DOCS = {
    "oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
    "hr/pay.md": (
        "---\nclassification: confidential\n---\n# Pay\n\n"
        "The pager bonus for on-call engineers is 500 euros a week.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-ask")
    docs = root / "docs"
    for rel, text in DOCS.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    folder = root / "idx"
    done = CliRunner().invoke(main, ["index", str(docs), "--index", str(folder), "--keyword-only"])
    assert done.exit_code == 0, done.output
    return folder


def _ask(index: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["ask", *args, "--index", str(index)])


def test_ask_prints_the_answer_and_numbered_citations(index: Path) -> None:
    result = _ask(index, "How quickly are pages answered?", "--as", "guest")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "The on-call engineer answers pages within 15 minutes. [1]"
    assert "[1] /oncall.md:3" in lines  # the line the sentence was taken from
    assert (
        "verified: citations are authorized contexts; every sentence is supported; "
        "the answer addresses the question"
    ) in lines


def test_the_demo_users_see_what_their_clearance_allows(index: Path) -> None:
    guest = _ask(index, "What is the pager bonus?", "--as", "guest", "--json")
    assert guest.exit_code == 0, guest.output
    data = json.loads(guest.output)
    assert (
        data["answer"] == "No document you can read answers this question."
        and data["citations"] == []
    )
    admin = _ask(index, "What is the pager bonus?", "--as", "admin", "--json")
    data = json.loads(admin.output)
    assert "500 euros" in data["answer"]
    assert data["citations"][0]["path"] == "/hr/pay.md"
    assert data["verification"]["passed"] is True


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("users.toml", '[alice]\nclearance = "confidential"\nroles = ["hr"]\n\n[bob]\n'),
        ("users.yaml", "users:\n  alice: {clearance: confidential, roles: [hr]}\n  bob:\n"),
    ],
)
def test_a_users_file_defines_who_may_ask(
    index: Path, tmp_path: Path, name: str, text: str
) -> None:
    users = tmp_path / name
    users.write_text(text)
    alice = _ask(index, "pager bonus", "--as", "alice", "--users", str(users), "--json")
    assert alice.exit_code == 0, alice.output
    assert "500 euros" in json.loads(alice.output)["answer"]
    bob = _ask(index, "pager bonus", "--as", "bob", "--users", str(users), "--json")
    assert "500" not in json.loads(bob.output)["answer"]
    nobody = _ask(index, "pager bonus", "--as", "mallory", "--users", str(users))
    assert nobody.exit_code == 1
    assert "unknown user 'mallory'; known users: alice, bob" in nobody.output


def test_bad_users_files_and_options_say_what_to_fix(index: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("alice: {roles: hr}\n")
    result = _ask(index, "q", "--as", "alice", "--users", str(bad))
    assert result.exit_code == 1 and "roles and tags must be lists of strings" in result.output
    bad.write_text("alice: {level: 3}\n")
    assert "unknown keys level" in _ask(index, "q", "--as", "alice", "--users", str(bad)).output
    assert (
        "--chat-url needs --chat-model"
        in _ask(index, "q", "--as", "guest", "--chat-url", "http://127.0.0.1:9/v1").output
    )
    assert (
        "needs --cross-encoder"
        in _ask(index, "q", "--as", "guest", "--rerank", "cross-encoder").output
    )
    missing = CliRunner().invoke(
        main, ["ask", "q", "--as", "guest", "--index", str(tmp_path / "none")]
    )
    assert missing.exit_code == 1 and "run `bastion index PATH` first" in missing.output


class _ForgingChat:
    """An OpenAI-compatible server whose model cites a chunk that is not in the context."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.bodies.append({"json": payload, "auth": self.headers.get("Authorization")})
                content = "Pages are answered within 15 minutes. §" + "f" * 32
                body = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": content}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def forging_chat() -> Iterator[_ForgingChat]:
    server = _ForgingChat()
    thread = threading.Thread(
        target=server.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_a_failed_verification_exits_4_and_says_why(
    index: Path, forging_chat: _ForgingChat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASTION_CHAT_API_KEY", "sk-cli-key")
    result = _ask(
        index,
        "How quickly are pages answered?",
        "--as",
        "guest",
        "--chat-url",
        forging_chat.url,
        "--chat-model",
        "forger",
    )
    assert result.exit_code == 4, result.output  # EXIT_UNVERIFIED (2 is a usage error)
    assert "VERIFICATION FAILED (citations, support):" in result.output
    assert re.search(r"cites §f{32}, which is not one of the answer's contexts", result.output)
    assert forging_chat.bodies[0]["auth"] == "Bearer sk-cli-key"
    assert forging_chat.bodies[0]["json"]["model"] == "forger"
    skipped = _ask(
        index,
        "How quickly are pages answered?",
        "--as",
        "guest",
        "--chat-url",
        forging_chat.url,
        "--chat-model",
        "forger",
        "--no-verify",
    )
    assert skipped.exit_code == 0 and "not verified" in skipped.output


def _identity(tmp_path: Path) -> Path:
    file = tmp_path / "identity.toml"
    file.write_text(
        'issuer = "https://id.test"\naudience = "bastion"\n\n[[keys]]\nalgorithm = "HS256"\n'
        'secret_env = "TEST_JWT_SECRET"\n\n[claims]\nrequired = []\n',
        encoding="utf-8",
    )
    return file


def _jwt(secret: str, **claims: Any) -> str:
    import time

    import jwt

    now = int(time.time())
    body = {"iss": "https://id.test", "aud": "bastion", "sub": "mia", "iat": now}
    body |= {"exp": now + 300, **claims}
    return jwt.encode(body, secret, algorithm="HS256")


def test_a_verified_token_says_who_asks(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s" * 48
    monkeypatch.setenv("TEST_JWT_SECRET", secret)
    identity = str(_identity(tmp_path))
    cleared = _ask(
        index,
        "pager bonus",
        "--token",
        _jwt(secret, clearance="confidential"),
        "--identity",
        identity,
    )
    assert cleared.exit_code == 0, cleared.output
    assert "500 euros" in cleared.output
    public = _ask(index, "pager bonus", "--token", _jwt(secret), "--identity", identity)
    assert "500 euros" not in public.output
    forged = _ask(
        index,
        "pager bonus",
        "--token",
        _jwt("x" * 48, clearance="restricted"),
        "--identity",
        identity,
    )
    assert forged.exit_code != 0 and "500 euros" not in forged.output
    assert "signature" in forged.output.lower()
    both = _ask(index, "pager bonus", "--as", "alice", "--token", "t", "--identity", identity)
    assert both.exit_code != 0 and "one of them" in both.output
