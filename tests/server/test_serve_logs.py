"""``bastion serve``'s log lines, read from a real server process: one JSON object per line
(``[server] log_format = "json"``) or text (``--log-format text``, over the file's), each
request's line with its id, method, path, status, duration and principal subject; never a
token, a query string, a body or a document's text; one request is one line whatever its path
holds; ``-q`` leaves only errors, ``-v`` adds uvicorn's and debug lines."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from .reload_support import McpSession, token
from .serve_support import PLAN, Served, bearer, serve_file

pytestmark = pytest.mark.slow

QUESTION = "Which wading-bird tally does the plan record?"
FORGED = 'eve\n{"level": "error", "message": "forged"}'


def _traffic(server: Served) -> list[str]:
    """Requests of every kind; the secrets that must never be logged."""
    ana = token()
    client = server.client
    wrote = client.post(
        "/v1/files/write", json={"path": "/docs/plan.md", "content": PLAN}, headers=bearer(ana)
    )
    assert wrote.status_code == 201
    read = client.get(
        "/v1/files/read",
        params={"path": "/docs/plan.md"},
        headers={**bearer(ana), "X-Request-Id": "trace-1"},
    )
    assert read.status_code == 200 and read.headers["x-request-id"] == "trace-1"
    assert client.get("/v1/files/read", params={"path": "/docs/plan.md"}).status_code == 401
    asked = client.post("/v1/ask", json={"question": QUESTION}, headers=bearer(ana))
    assert asked.status_code == 200
    McpSession(client, ana).open().read("/docs/plan.md")
    forged = token(FORGED)
    assert client.get("/v1/me", headers=bearer(forged)).status_code == 401  # refused subject
    assert client.get("/v1/files%0aread", headers=bearer(ana)).status_code == 400
    return [ana, forged, "twelve", "heron", "plan.md", "wading-bird"]


def _stopped(server: Served) -> list[str]:
    server.signal(signal.SIGTERM)
    assert server.wait() == 0
    return server.lines()


def test_json_lines_carry_each_request_and_no_secret(tmp_path: Path) -> None:
    server = Served(serve_file(tmp_path, 'log_format = "json"\n'))
    try:
        secrets = _traffic(server)
        lines = _stopped(server)
    finally:
        server.close()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for record in records:
        assert {"time", "level", "logger", "message", "request_id"} <= set(record)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", str(record["time"]))
    requests = [r for r in records if r["logger"] == "bastion.access"]
    traced = [r for r in requests if r["request_id"] == "trace-1"]
    assert len(traced) == 1
    line = traced[0]
    assert (line["level"], line["method"], line["path"], line["status"], line["subject"]) == (
        "info",
        "GET",
        "/v1/files/read",
        200,
        "ana",
    )
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    seen = {(r["method"], r["path"], r["status"], r["subject"]) for r in requests}
    assert ("GET", "/v1/files/read", 401, "-") in seen
    assert ("POST", "/v1/ask", 200, "ana") in seen
    assert ("POST", "/mcp", 200, "ana") in seen
    assert ("GET", "/v1/me", 401, "-") in seen
    assert ("GET", "/v1/files\\x0aread", 400, "-") in seen  # refused before any token
    assert all(r["request_id"] != "-" for r in requests)
    assert not any(r["path"] in ("/healthz", "/metrics") for r in requests)
    assert any(r["message"] == "stopped" for r in records)
    text = "\n".join(lines)
    for secret in secrets:
        assert secret not in text, secret


def test_text_lines_over_the_files_json_and_verbose(tmp_path: Path) -> None:
    config = serve_file(tmp_path, 'log_format = "json"\n')
    server = Served(config, "--log-format", "text", "-v")
    try:
        secrets = _traffic(server)
        lines = _stopped(server)
    finally:
        server.close()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+ \[[\w.-]+\] "
    assert all(re.match(stamp, line) for line in lines), lines  # one request, one line
    assert any(" INFO bastion.access [trace-1] GET /v1/files/read 200 ana " in x for x in lines)
    assert any(" GET /v1/files\\x0aread 400 - " in line for line in lines)
    assert any(" GET /v1/me 401 - " in line for line in lines)
    assert any(" INFO uvicorn.error " in line for line in lines)  # -v: uvicorn's own lines
    assert not any(line.startswith("{") for line in lines)
    text = "\n".join(lines)
    for secret in secrets:
        assert secret not in text, secret


def test_quiet_logs_errors_only(tmp_path: Path) -> None:
    server = Served(serve_file(tmp_path), "-q")
    try:
        _traffic(server)
        lines = _stopped(server)
    finally:
        server.close()
    assert lines == []
