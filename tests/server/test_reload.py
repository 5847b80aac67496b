"""Access changes apply to the next request: the server follows its workspace file, and
revoked tokens are refused, with nothing remembered from before the change."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion.server.loading import ServerFile, opened_app
from bastion.server.shared import SharedState

from .reload_support import SECRET, McpSession, rewrite, token, workspace_file
from .support import running

ENV = {"BASTION_TEST_SECRET": SECRET}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, httpx.Client]]:
    path = workspace_file(tmp_path)
    with (
        opened_app(ServerFile.read(path, env=ENV)) as app,
        running(app) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        wrote = client.post(
            "/v1/files/write",
            json={"path": "/docs/plan.md", "content": "# Plan\n\nThe heron count.\n"},
            headers={"Authorization": f"Bearer {token()}"},
        )
        assert wrote.status_code == 201, wrote.text
        yield path, client


def _read(client: httpx.Client, bearer: str, path: str = "/docs/plan.md") -> httpx.Response:
    return client.get(
        "/v1/files/read", params={"path": path}, headers={"Authorization": f"Bearer {bearer}"}
    )


def test_a_role_taken_out_of_the_policy_is_refused_on_the_next_request(
    served: tuple[Path, httpx.Client],
) -> None:
    path, client = served
    ana = token()
    mcp = McpSession(client, ana).open()
    status, output = mcp.read("/docs/plan.md")
    assert status == 200 and output is not None and "heron" in output["content"]
    assert _read(client, ana).status_code == 200
    hits = client.get(
        "/v1/search", params={"query": "heron"}, headers={"Authorization": f"Bearer {ana}"}
    )
    assert [h["path"] for h in hits.json()["hits"]] == ["/docs/plan.md"]

    workspace_file(path.parent, roles=("auditor",))

    assert _read(client, ana).status_code == 404
    hits = client.get(
        "/v1/search", params={"query": "heron"}, headers={"Authorization": f"Bearer {ana}"}
    )
    assert hits.json()["hits"] == []
    status, _ = mcp.read("/docs/plan.md")
    assert status == 404  # the session belonged to the old configuration
    again = McpSession(client, ana).open()  # a new session: tools fitted to no access
    assert again.read("/docs/plan.md")[1] == {
        "success": False,
        "error": "unknown tool 'read_file'; use one of:",
    }
    auditor = token("ida", roles=("auditor",))
    assert _read(client, auditor).json()["content"] == "# Plan\n\nThe heron count.\n"


def test_a_label_raised_on_a_mount_applies_at_once(served: tuple[Path, httpx.Client]) -> None:
    path, client = served
    ana = token()
    assert _read(client, ana).status_code == 200
    text = path.read_text().replace('classification = "internal"', 'classification = "restricted"')
    rewrite(path, text)
    assert _read(client, ana).status_code == 404
    listed = client.get(
        "/v1/files", params={"path": "/docs"}, headers={"Authorization": f"Bearer {ana}"}
    )
    assert "plan.md" not in listed.text


def test_an_invalid_file_keeps_the_running_configuration(
    served: tuple[Path, httpx.Client], caplog: pytest.LogCaptureFixture
) -> None:
    path, client = served
    ana = token()
    good = path.read_text()
    with caplog.at_level(logging.ERROR, logger="bastion.server"):
        rewrite(path, good.replace('effect = "allow"', 'effect = "perhaps"'))
        assert _read(client, ana).status_code == 200
    refused = [r.getMessage() for r in caplog.records if "reload refused" in r.getMessage()]
    assert len(refused) == 1
    assert "effect" in refused[0] and "\n" not in refused[0]
    rewrite(path, good.replace('"analyst"', '"auditor"'))
    assert _read(client, ana).status_code == 404


def test_a_file_that_does_not_parse_keeps_the_running_configuration(
    served: tuple[Path, httpx.Client], caplog: pytest.LogCaptureFixture
) -> None:
    path, client = served
    with caplog.at_level(logging.ERROR, logger="bastion.server"):
        rewrite(path, "[[mounts]\nprefix = ")
        assert _read(client, token()).status_code == 200
        assert _read(client, token()).status_code == 200
    refused = [r.getMessage() for r in caplog.records if "reload refused" in r.getMessage()]
    assert len(refused) == 1 and "is not valid TOML" in refused[0]


def test_a_new_identity_key_applies_at_once(served: tuple[Path, httpx.Client]) -> None:
    path, client = served
    rewrite(
        path, path.read_text().replace('issuer = "https://id.test"', 'issuer = "https://other"')
    )
    r = _read(client, token())
    assert r.status_code == 401 and "issuer" in r.json()["error"]["message"]


def test_a_revoked_token_and_a_revoked_subject_are_refused(
    served: tuple[Path, httpx.Client],
) -> None:
    path, client = served
    kept, dropped = token(jti="keep-1"), token(jti="drop-1")
    shared = SharedState(".bastion/server.db", base=path.parent)
    shared.revoke_token("drop-1")
    assert _wait_for(lambda: _read(client, dropped).status_code == 401)
    message = _read(client, dropped).json()["error"]["message"]
    assert message == "token revoked (token): sign in again"
    assert _read(client, kept).status_code == 200

    mcp = McpSession(client, token("bo", jti="bo-1")).open()
    shared.revoke_subject("bo")
    assert _wait_for(lambda: mcp.read("/docs/plan.md")[0] == 401)
    assert _read(client, token("bo", iat=0)).status_code == 401


def _wait_for(check: object) -> bool:
    """True once ``check()`` holds; revocations are read at most every half second, so a
    few seconds is ample (this bounds a hang, it measures nothing)."""
    import time

    assert callable(check)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
