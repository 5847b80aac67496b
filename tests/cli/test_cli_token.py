"""``--token`` (or ``$BASTION_TOKEN``) is verified with ``--identity FILE`` or the workspace
file's own ``[identity]`` table, which ``bastion serve`` reads too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cli_support import Run, as_json, error_of

SECRET = "s" * 48
IDENTITY = (
    '[identity]\nissuer = "https://id.test"\naudience = "bastion"\n\n'
    '[[identity.keys]]\nalgorithm = "HS256"\nsecret_env = "TEST_JWT_SECRET"\n\n'
    '[identity.claims]\nrequired = ["tenant"]\n'
)


def _jwt(secret: str = SECRET, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": "https://id.test", "aud": "bastion", "sub": "kim", "iat": now, "exp": now + 300}
    return jwt.encode({**body, **claims}, secret, algorithm="HS256")


@pytest.fixture
def served(demo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TEST_JWT_SECRET", SECRET)
    config = demo / "bastion.toml"
    config.write_text(config.read_text() + "\n" + IDENTITY + "\n[server]\n")
    return demo


def test_a_token_verified_by_the_files_identity_table(served: Path, run: Run) -> None:
    hr = _jwt(tenant="larkspur", roles=["hr"], clearance="confidential")
    listed = as_json(run("ls", "--token", hr, "/larkspur", "--json"))
    assert "hr" in [e["name"] for e in listed["entries"]]
    public = run("ls", "/larkspur", "--json", env={"BASTION_TOKEN": _jwt(tenant="larkspur")})
    assert [e["name"] for e in as_json(public)["entries"]] == ["public"]


def test_a_forged_token_is_an_authentication_error(served: Path, run: Run) -> None:
    forged = _jwt("x" * 48, tenant="larkspur", clearance="restricted")
    result = run("cat", "--token", forged, "/larkspur/legal/project-heron.md", "--json")
    assert result.exit_code == 1 and result.stdout == ""
    assert error_of(result)["error"] == "unauthenticated"
    assert "signature" in error_of(result)["message"]
