"""``GET /v1/audit`` over real HTTP: every window of the log can be read whatever a request
held (a lone surrogate in a path was a 500 for each window holding its record), the log is
read a page at a time (``limit``, ``cursor``, ``next``), and the checks the server makes on
a principal's behalf are marked internal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from bastion import LocalStore, Mount
from bastion.core.audit_sinks import JsonLinesAuditSink
from bastion.governance.identity import IdentityConfig
from bastion.server import create_app
from bastion.workspace import Workspace

from .conftest import policy
from .support import Token, auth, running

HOSTILE = [
    ("/v1/files/write", {"path": "/docs/\ud800.md", "content": "x"}),
    ("/v1/files/write", {"path": "/docs/a\udfff/b.md", "content": "x"}),
    ("/v1/files/move", {"src": "/docs/handbook.md", "dst": "/docs/\udc80x.md"}),
    ("/v1/files/copy", {"src": "/docs/\udbff\udbff", "dst": "/docs/c.md"}),
    ("/v1/files/delete", {"path": "/docs/\ud800\x1b[2J"}),
    ("/v1/files/mkdir", {"path": "/\ud800"}),
    ("/v1/search", {"query": "kestrel", "path": "/docs/\udc00"}),
]
"""Bodies whose paths hold text UTF-8 cannot carry (a JSON ``\\ud800`` escape)."""


def _post_raw(client: httpx.Client, url: str, body: dict[str, Any], token: str) -> int:
    raw = json.dumps(body, ensure_ascii=True).encode("ascii")  # keeps the escapes
    headers = {**auth(token), "Content-Type": "application/json"}
    return client.post(url, content=raw, headers=headers).status_code


def _pages(client: httpx.Client, ops: str, limit: int) -> list[list[dict[str, Any]]]:
    """Every page from the newest back, each checked to be a readable JSON page."""
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        r = client.get("/v1/audit", params=params, headers=auth(ops))
        assert r.status_code == 200, r.text
        page = r.json()
        assert set(page) == {"records", "next"} and len(page["records"]) <= limit
        pages.append(page["records"])
        cursor = page["next"]
        if cursor is None:
            return pages


def test_a_request_with_a_lone_surrogate_never_poisons_the_audit_log(
    client: httpx.Client, token: Token
) -> None:
    ana, ops = token(), token("olga", roles=("ops",))
    for url, body in HOSTILE:
        assert _post_raw(client, url, body, ana) == 400, (url, body)
    for limit in (1, 3, 1000):  # every window that holds one of the records
        pages = _pages(client, ops, limit)
        records = [r for page in reversed(pages) for r in page]
        paths = [r["path"] for r in records] + [r["target"] or "" for r in records]
        assert "/docs/\\ud800.md" in paths and "/docs/\\udc80x.md" in paths
        assert "/docs/\\ud800\x1b[2J" in paths  # kept as text; JSON escapes the control
        for record in records:
            for value in record.values():
                if isinstance(value, str):
                    value.encode("utf-8")  # every field is text UTF-8 carries


def test_pages_follow_one_another_without_gaps_and_stay_put(
    client: httpx.Client, token: Token
) -> None:
    ana, ops = token(), token("olga", roles=("ops",))
    for _ in range(5):
        client.get("/v1/files/stat", params={"path": "/docs/handbook.md"}, headers=auth(ana))
    whole = client.get("/v1/audit", params={"limit": 1000}, headers=auth(ops)).json()
    assert whole["next"] is None and len(whole["records"]) >= 5
    for limit in (1, 2, 7):
        pages = _pages(client, ops, limit)
        assert [r for page in reversed(pages) for r in page] == whole["records"]
        assert all(len(page) == limit for page in pages[:-1])
    first = client.get("/v1/audit", params={"limit": 3}, headers=auth(ops)).json()
    older = {"limit": 3, "cursor": first["next"]}
    before = client.get("/v1/audit", params=older, headers=auth(ops)).json()
    client.get("/v1/files/stat", params={"path": "/docs/handbook.md"}, headers=auth(ana))
    after = client.get("/v1/audit", params=older, headers=auth(ops)).json()
    assert after == before  # a cursor names the same page while records are appended
    assert before["records"] == whole["records"][-6:-3]


def test_a_json_lines_log_pages_every_record_back_whatever_it_holds(
    tmp_path: Path, identity: IdentityConfig, token: Token
) -> None:
    log = tmp_path / "audit.jsonl"
    (tmp_path / "docs").mkdir()
    sink = JsonLinesAuditSink(log)
    mounts = [Mount.of("/docs", LocalStore(tmp_path / "docs"), "read_write")]
    ws = Workspace(mounts, policy=policy(), audit=sink)
    ana, ops = token(), token("olga", roles=("ops",))
    try:
        with running(create_app(ws, identity=identity)) as url, httpx.Client(base_url=url) as c:
            for path, body in HOSTILE[:-1]:  # no index here: no search
                assert _post_raw(c, path, body, ana) == 400, (path, body)
            with log.open("ab") as f:  # a record as the sink wrote it before: a \ud800 escape
                f.write(b'{"time": 1.0, "principal": "old", "tenant": "acme", "operation": ')
                f.write(b'"read", "path": "/docs/\\\\ud800", "allowed": false, "reason": "x"}\n')
                f.write(b'{"time": 1.0, "principal": "old", "tenant": "acme", "operation": ')
                f.write(b'"read", "path": "/docs/\\ud800", "allowed": false, "reason": "x"}\n')
            for line in log.read_bytes().splitlines():
                line.decode("utf-8")  # every line the sink wrote is UTF-8
            for limit in (1, 4, 1000):
                records = [r for page in _pages(c, ops, limit) for r in page]
                assert len(records) == len(HOSTILE) - 1 + 2
                assert [r["path"] for r in records if r["principal"] == "old"] == [
                    "/docs/\\ud800",
                    "/docs/\\ud800",
                ]
    finally:
        sink.close()


@pytest.mark.parametrize(
    "cursor", ["abc", "-1", "1e3", "99999999999999", "9" * 40, "٣", " 1", "1.0", "0x10"]
)
def test_a_cursor_that_is_not_one_is_a_400(client: httpx.Client, token: Token, cursor: str) -> None:
    ops = token("olga", roles=("ops",))
    r = client.get("/v1/audit", params={"limit": 2, "cursor": cursor}, headers=auth(ops))
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_field", r.text
    assert "cursor" in r.json()["error"]["message"]


@pytest.mark.parametrize("limit", ["0", "1001", "x", "-5"])
def test_a_limit_out_of_range_is_a_400(client: httpx.Client, token: Token, limit: str) -> None:
    ops = token("olga", roles=("ops",))
    r = client.get("/v1/audit", params={"limit": limit}, headers=auth(ops))
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_field"


def test_a_page_is_for_operators_only(client: httpx.Client, token: Token) -> None:
    r = client.get("/v1/audit", params={"limit": 1, "cursor": "0"}, headers=auth(token()))
    assert r.status_code == 403


def test_the_checks_of_me_are_internal_records(client: httpx.Client, token: Token) -> None:
    ana, ops = token("ana-me"), token("olga", roles=("ops",))
    assert client.get("/v1/me", headers=auth(ana)).status_code == 200
    records = client.get("/v1/audit", params={"limit": 50}, headers=auth(ops)).json()["records"]
    mine = [r for r in records if r["principal"] == "ana-me"]
    assert mine == [], mine  # the checks of /v1/me are internal: no operator view lists them
    stat = client.get("/v1/files/stat", params={"path": "/docs/handbook.md"}, headers=auth(ana))
    assert stat.status_code == 200
    records = client.get("/v1/audit", params={"limit": 5}, headers=auth(ops)).json()["records"]
    asked = [r for r in records if r["principal"] == "ana-me" and r["operation"] == "stat"]
    assert asked and asked[-1]["internal"] is False  # her own request is hers
