"""A principal's role removed while it streams an answer and holds an MCP session: its next
request is refused, in each of three ``bastion serve`` processes sharing one workspace.

Each process holds one of the principal's answers open (the question still arriving) and an
MCP session. The role is taken out of the workspace file; a quarter of a second later (the
documented bound, ``bastion.server.reload.CHECK_EVERY``, waited out by ``rewrite``) the next
MCP call and the next API read are refused in every process, while the auditor who keeps
access reads on. The answers still open are then finished: each is answered under the new
policy, so none carries the document the principal may no longer read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .reload_support import McpSession, token, workspace_file
from .serve_support import PLAN, Pending, Served, bearer, events, serve_file

pytestmark = pytest.mark.slow


@pytest.fixture
def three(tmp_path: Path) -> Iterator[tuple[Path, list[Served]]]:
    config = serve_file(tmp_path)
    started: list[Served] = []
    try:
        for _ in range(3):
            started.append(Served(config))
        yield config, started
    finally:
        for server in started:
            server.close()


def _read(server: Served, who: str) -> int:
    r = server.client.get("/v1/files/read", params={"path": "/docs/plan.md"}, headers=bearer(who))
    return r.status_code


def test_a_role_removed_mid_stream_refuses_the_next_request_in_each_of_three_processes(
    three: tuple[Path, list[Served]],
) -> None:
    config, servers = three
    ana, ida = token(), token("ida", roles=("auditor",))
    wrote = servers[0].client.post(
        "/v1/files/write", json={"path": "/docs/plan.md", "content": PLAN}, headers=bearer(ana)
    )
    assert wrote.status_code == 201, wrote.text
    sessions, answers = [], []
    for server in servers:
        session = McpSession(server.client, ana).open()
        status, output = session.read("/docs/plan.md")
        assert status == 200 and output is not None and "twelve" in output["content"]
        assert _read(server, ana) == 200
        sessions.append(session)
        answers.append(
            Pending(
                server.port,
                "/v1/ask",
                {"question": "What is the heron count?"},
                {**bearer(ana), "Accept": "text/event-stream"},
            )
        )
        server.wait_in_flight(1)

    text = config.read_text()
    workspace_file(config.parent, roles=("auditor",))  # the role removed, in one shared file
    assert config.read_text() != text

    for server, session in zip(servers, sessions, strict=True):
        assert session.read("/docs/plan.md") == (404, None), server.lines()
        assert _read(server, ana) == 404
        assert _read(server, ida) == 200

    for answer in answers:
        status, body = answer.finish()
        assert status == 200
        got = events(body)
        assert got[-1][0] == "done", got
        assert "twelve" not in body.decode() and "heron count is" not in body.decode()
        assert dict(got)["citations"] == {"citations": []}
