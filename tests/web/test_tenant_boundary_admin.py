"""The Administration tab's endpoints keep tenants apart, over real HTTP on the demo server
(two companies: ``sam`` is larkspur's operator, ``zoe`` tidewater's): the audit log
(``GET /v1/audit``, which the tab's table and its CSV export read) shows an operator the
records of its own tenant only, and ``GET /v1/explain`` names no user of another tenant and
explains another tenant's documents as missing paths.

Before 2026-11-28 zoe read larkspur's records (``mei``'s reads of ``/larkspur/hr/...``) and
explained any larkspur user on any larkspur document, labels included."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bastion.server.demo import demo_app
from server.support import running

from .people import demo_token

SALARY = "/larkspur/hr/salary-bands.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


def _as(site: str, user: str) -> httpx.Client:
    bearer = {"Authorization": f"Bearer {demo_token(site, user)}"}
    return httpx.Client(base_url=site, timeout=30, headers=bearer)


def _all_records(client: httpx.Client, **filters: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": 1000, **filters, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/audit", params=params)
        assert page.status_code == 200, page.text
        records = page.json()["records"] + records
        cursor = page.json()["next"]
        if cursor is None:
            return records


def test_an_operator_reads_its_own_tenants_records_only(site: str) -> None:
    with _as(site, "mei") as mei, _as(site, "tom") as tom:
        assert mei.get("/v1/files/read", params={"path": SALARY}).status_code == 200
        tom.get("/v1/files/read", params={"path": SALARY})  # another tenant's: not found
        tom.post("/v1/search", json={"query": "dispatch"})
    with _as(site, "zoe") as zoe, _as(site, "sam") as sam:
        theirs = _all_records(zoe)
        ours = _all_records(sam)
        for_mei = _all_records(zoe, principal="mei")
    assert theirs and {r["tenant"] for r in theirs} == {"tidewater"}
    assert {r["tenant"] for r in ours} == {"larkspur"}
    assert for_mei == []  # a filter on another tenant's user finds nothing
    assert not any(r["principal"] in {"mei", "sam", "ana"} for r in theirs)
    # tom's own attempt on the larkspur path is tidewater's record, as tom was told
    tried = [r for r in theirs if r["principal"] == "tom" and r["path"] == SALARY]
    assert tried and all(not r["allowed"] and "not under any mount" in r["reason"] for r in tried)
    assert "labels" not in repr(tried)


def test_explain_names_no_user_of_another_tenant(site: str) -> None:
    with _as(site, "zoe") as zoe:
        asked = zoe.get("/v1/explain", params={"user": "mei", "path": SALARY})
        nobody = zoe.get("/v1/explain", params={"user": "nobody", "path": SALARY})
    assert asked.status_code == nobody.status_code == 404
    message = asked.json()["error"]["message"]
    assert message == "unknown user 'mei'; users of this server: tom, zoe"
    for larkspur in ("sam", "ana", "raj", "lena", "omar", "gus"):
        assert larkspur not in message


@pytest.mark.parametrize(
    ("hidden", "missing"),
    [
        (SALARY, "/nowhere/salary-bands.md"),
        ("/larkspur/hr", "/nowhere/hr"),
        ("/larkspur", "/nowhere"),
    ],
)
def test_explain_tells_another_tenants_documents_like_missing_paths(
    site: str, hidden: str, missing: str
) -> None:
    with _as(site, "zoe") as zoe:
        for action in ("read", "list", "write"):
            told = zoe.get("/v1/explain", params={"user": "tom", "path": hidden, "action": action})
            absent = zoe.get(
                "/v1/explain", params={"user": "tom", "path": missing, "action": action}
            )
            assert told.status_code == absent.status_code == 200
            a, b = told.json(), absent.json()
            assert a.pop("path") == hidden and b.pop("path") == missing
            assert a == b
            assert "larkspur" not in repr(a) and "confidential" not in repr(a)


def test_an_operator_still_explains_its_own_tenant(site: str) -> None:
    with _as(site, "sam") as sam:
        found = sam.get("/v1/explain", params={"user": "mei", "path": SALARY})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["allowed"] is True and body["mount"]["prefix"] == "/larkspur"


def _settled(client: httpx.Client) -> None:
    """Wait until no repair runs (polled as the page does)."""
    deadline = time.monotonic() + 60
    while client.get("/v1/index/status").json()["job"]["running"]:
        assert time.monotonic() < deadline, "the repair did not end"
        time.sleep(0.05)


def test_the_index_repair_of_another_tenants_operator_is_not_told(site: str) -> None:
    """The index is shared, so its one repair is too: another tenant's operator is told only
    whether one runs (before 2026-11-28 it read who started it and what it found: counts of
    documents of the other tenant)."""
    with _as(site, "sam") as sam, _as(site, "zoe") as zoe:
        started = sam.post("/v1/index/repair", json={"rebuild": True})
        assert started.status_code == 202, started.text
        _settled(sam)
        ours = sam.get("/v1/index/status").json()["job"]
        theirs = zoe.get("/v1/index/status").json()["job"]
        again = zoe.post("/v1/index/repair", json={}).json()["job"]
        _settled(zoe)
        mine = zoe.get("/v1/index/status").json()["job"]
        seen_by_sam = sam.get("/v1/index/status").json()["job"]
    assert ours["started_by"] == "sam" and ours["result"]["indexed"] > 0
    hidden = {"running": False, "done": 0, "total": 0, "started_by": "", "result": {}, "error": ""}
    assert theirs == hidden
    assert again["started_by"] == "zoe"  # a repair of her own: hers to read
    assert mine["started_by"] == "zoe" and mine["error"] == ""
    assert seen_by_sam == hidden
