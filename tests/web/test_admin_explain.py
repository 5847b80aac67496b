"""The operator's HTTP side of the administration: "why can't X see this?" (``GET
/v1/explain``: operators only, audited, the same facts as ``bastion explain``) and the audit
log's filters with its pages."""

from __future__ import annotations

import time
from collections.abc import Iterator

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


@pytest.fixture(scope="module")
def sam(site: str) -> Iterator[httpx.Client]:
    bearer = {"Authorization": f"Bearer {demo_token(site, 'sam')}"}
    with httpx.Client(base_url=site, timeout=30, headers=bearer) as client:
        yield client


def _why(sam: httpx.Client, user: str, path: str, action: str = "read") -> httpx.Response:
    return sam.get("/v1/explain", params={"user": user, "path": path, "action": action})


def test_explain_says_which_part_decides(sam: httpx.Client) -> None:
    ana = _why(sam, "ana", SALARY).json()
    assert ana["allowed"] is False and ana["decided_by"] == "the document's labels"
    assert ana["labels"]["classification"] == "confidential" and ana["labels"]["roles"] == ["hr"]
    assert ana["labels_admit"] is False and ana["mount"]["prefix"] == "/larkspur"
    mei = _why(sam, "mei", SALARY).json()
    assert mei["allowed"] is True and mei["labels_admit"] is True
    wrote = _why(sam, "mei", SALARY, "write").json()
    assert wrote["allowed"] is False
    assert wrote["decided_by"] == "the scope of mount /larkspur (read_only)"
    nowhere = _why(sam, "mei", "/elsewhere/x.md").json()
    assert nowhere["allowed"] is False and nowhere["decided_by"] == "no mount holds this path"


def test_explain_refuses_what_it_cannot_answer(site: str, sam: httpx.Client) -> None:
    unknown = _why(sam, "nobody", SALARY)
    assert unknown.status_code == 404
    assert "unknown user 'nobody'; users of this server: " in unknown.json()["error"]["message"]
    assert _why(sam, "ana", SALARY, "fly").json()["error"]["code"] == "bad_field"
    assert _why(sam, "ana", "/a/../../etc").status_code == 400
    for user in ("ana", "mei"):
        other = httpx.get(
            f"{site}/v1/explain",
            params={"user": "sam", "path": SALARY},
            headers={"Authorization": f"Bearer {demo_token(site, user)}"},
        )
        assert other.status_code == 403 and "operators" in other.json()["error"]["message"]
        assert "confidential" not in other.text


def test_each_explanation_is_in_the_audit_log(sam: httpx.Client) -> None:
    _why(sam, "lena", SALARY)  # a user of sam's own tenant (zoe's is another: unknown to him)
    page = sam.get("/v1/audit", params={"operation": "explain", "limit": 100}).json()
    last = page["records"][-1]
    assert (last["principal"], last["path"], last["allowed"]) == ("sam", SALARY, True)
    assert last["reason"] == "explained read for lena"


def test_the_audit_filters_and_their_pages(site: str, sam: httpx.Client) -> None:
    start = time.time()
    ana = {"Authorization": f"Bearer {demo_token(site, 'ana')}"}
    for _ in range(5):
        assert (
            httpx.get(f"{site}/v1/files/read", params={"path": SALARY}, headers=ana).status_code
            == 404
        )
        httpx.get(f"{site}/v1/files", params={"path": "/larkspur/handbook"}, headers=ana)
    refused = sam.get(
        "/v1/audit", params={"principal": "ana", "outcome": "refused", "since": start}
    ).json()["records"]
    assert len(refused) == 5
    assert {(r["principal"], r["operation"], r["path"], r["allowed"]) for r in refused} == {
        ("ana", "read", SALARY, False)
    }
    listed = sam.get(
        "/v1/audit",
        params={"principal": "ana", "operation": "list", "path": "/larkspur/hand", "since": start},
    ).json()["records"]
    assert len(listed) == 5 and all(r["allowed"] for r in listed)
    assert sam.get("/v1/audit", params={"until": start - 3600, "principal": "ana"}).json() == {
        "records": [],
        "next": None,
    }
    # pages of two through the five refusals: 2, 2, 1, then none
    seen, cursor, sizes = [], None, []
    while True:
        params = {"principal": "ana", "outcome": "refused", "since": start, "limit": 2}
        page = sam.get("/v1/audit", params=params | ({"cursor": cursor} if cursor else {})).json()
        sizes.append(len(page["records"]))
        seen += page["records"]
        cursor = page["next"]
        if cursor is None:
            break
    assert sizes == [2, 2, 1] and len({r["time"] for r in seen}) == 5
    bad = sam.get("/v1/audit", params={"outcome": "maybe"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_field"
