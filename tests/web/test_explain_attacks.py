"""A hostile principal against ``GET /v1/explain`` and the audit log's filters, over real HTTP
on the demo server: whoever is not an operator is refused with nothing of the question in the
answer and the refusal recorded; every question an operator asks is recorded, answered or not;
an answer gives labels, the rule and the mount, never a document's text; forged cursors and
filters made of pattern characters admit nothing they should not."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bastion.server.demo import demo_app
from server.support import running

from .people import demo_token

SALARY = "/larkspur/hr/salary-bands.md"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def site(folder: Path) -> Iterator[str]:
    with running(demo_app(folder)) as url:
        yield url


def _as(site: str, user: str) -> httpx.Client:
    bearer = {"Authorization": f"Bearer {demo_token(site, user)}"}
    return httpx.Client(base_url=site, timeout=30, headers=bearer)


@pytest.fixture(scope="module")
def sam(site: str) -> Iterator[httpx.Client]:
    with _as(site, "sam") as client:
        yield client


def _records(sam: httpx.Client, since: float, **filters: Any) -> list[dict[str, Any]]:
    page = sam.get("/v1/audit", params={"since": since, "limit": 1000, **filters})
    assert page.status_code == 200, page.text
    records: list[dict[str, Any]] = page.json()["records"]
    return records


@pytest.mark.parametrize("user", ["ana", "mei", "gus", "tom"])
def test_someone_who_is_not_an_operator_learns_nothing_and_is_recorded(
    site: str, sam: httpx.Client, user: str
) -> None:
    start = time.time()
    with _as(site, user) as them:
        asked = [
            them.get("/v1/explain", params={"user": "mei", "path": SALARY}),
            them.get("/v1/explain", params={"user": "nobody", "path": SALARY}),
            them.get("/v1/explain", params={"user": "mei", "path": SALARY, "action": "fly"}),
            them.get("/v1/explain", params={"user": "mei", "path": "/larkspur/none.md"}),
        ]
        audit = them.get("/v1/audit", params={"principal": "mei", "path": "/larkspur"})
    # one answer whatever was asked: no user list, no labels, no path, no action list
    bodies = {r.text for r in asked}
    assert {r.status_code for r in asked} == {403} and len(bodies) == 1
    message = asked[0].json()["error"]["message"]
    assert message == "explaining access is for operators: it needs the 'audit' action on /"
    assert audit.status_code == 403 and "records" not in audit.text
    for leak in ("salary", "larkspur", "confidential", "mei", "nobody", "choose one of"):
        assert leak not in asked[0].text.lower()
    operator = "zoe" if user == "tom" else "sam"  # each tenant's operator reads its own
    with _as(site, operator) as reader:
        refused = _records(reader, start, principal=user, outcome="refused")
    assert [(r["operation"], r["path"]) for r in refused] == [("explain", "/")] * 4 + [
        ("audit", "/")
    ]


def test_every_question_an_operator_asks_is_recorded(sam: httpx.Client) -> None:
    start = time.time()
    answered = sam.get("/v1/explain", params={"user": "ana", "path": SALARY})
    unknown = sam.get("/v1/explain", params={"user": "nobody", "path": SALARY})
    action = sam.get("/v1/explain", params={"user": "ana", "path": SALARY, "action": "fly"})
    malformed = sam.get("/v1/explain", params={"user": "ana", "path": "/a/../../etc"})
    assert [r.status_code for r in (answered, unknown, action, malformed)] == [200, 404, 400, 400]
    recorded = _records(sam, start, principal="sam", operation="explain")
    assert [(r["path"], r["allowed"]) for r in recorded] == [
        (SALARY, True),
        (SALARY, False),
        ("/", False),
        ("/a/../../etc", False),
    ]
    assert recorded[0]["reason"] == "explained read for ana"
    assert recorded[1]["reason"].startswith("unknown user 'nobody'")


def test_an_answer_gives_labels_and_rules_never_the_documents_text(
    site: str, sam: httpx.Client
) -> None:
    with _as(site, "mei") as mei:
        text = mei.get("/v1/files/read", params={"path": SALARY}).json()["content"]
    body_lines = [line for line in text.splitlines() if len(line.strip()) > 12]
    assert body_lines
    for user in ("ana", "mei", "sam"):  # tom is another tenant's: an unknown user to sam
        for action in ("read", "write", "search", "list"):
            r = sam.get("/v1/explain", params={"user": user, "path": SALARY, "action": action})
            assert r.status_code == 200, r.text
            assert not [line for line in body_lines if line.strip() in r.text], (user, action)
            assert set(r.json()) <= {
                "user", "clearance", "roles", "effective_roles", "path", "action", "allowed",
                "decided_by", "mount", "rule", "labels", "label_source", "labels_admit",
            }  # fmt: skip


@pytest.mark.parametrize(
    ("user", "path", "status"),
    [
        ("ana", "/nowhere/at/all.md", 200),  # under no mount: refused, said so, no labels
        ("ana", "/", 200),
        ("../../etc/passwd", SALARY, 404),
        ("ana\x00", SALARY, 404),
        ("a" * 129, SALARY, 400),
        ("ana", "x" * 4097, 400),
        ("ana", "/larkspur/hr/\x00.md", 400),
        ("ana", "relative/path.md", 200),  # read from the root, as every path is
    ],
)
def test_odd_users_and_paths_are_clear_refusals(
    sam: httpx.Client, user: str, path: str, status: int
) -> None:
    r = sam.get("/v1/explain", params={"user": user, "path": path})
    assert r.status_code == status, r.text
    data = r.json()
    if status == 200:
        assert data["allowed"] is False and data["mount"] is None
        assert data.get("labels") is None and data["decided_by"] == "no mount holds this path"
    else:
        assert "\n" not in data["error"]["message"] and "Traceback" not in r.text


@pytest.mark.parametrize(
    "cursor",
    ["-1", "99999999999999999999", "1e3", " 3", "3 ", "0x10", "\u0663", "3\x00", "+3", "1_0"],
)
def test_a_forged_cursor_is_refused(sam: httpx.Client, cursor: str) -> None:
    r = sam.get("/v1/audit", params={"cursor": cursor, "limit": 2})
    assert r.status_code == 400
    assert r.json()["error"] == {
        "code": "bad_field",
        "message": "'cursor': not a cursor of this audit log: use the 'next' of a previous page",
    }


def test_a_cursor_from_another_filter_only_pages_back_through_this_one(
    site: str, sam: httpx.Client
) -> None:
    start = time.time()
    with _as(site, "ana") as ana:
        for _ in range(3):
            ana.get("/v1/files/read", params={"path": SALARY})
            ana.get("/v1/files", params={"path": "/larkspur/handbook"})
    listed = sam.get(
        "/v1/audit", params={"since": start, "principal": "ana", "operation": "list", "limit": 1}
    ).json()
    assert listed["next"]
    other = sam.get(
        "/v1/audit",
        params={"since": start, "principal": "ana", "outcome": "refused", "cursor": listed["next"]},
    ).json()["records"]
    assert other and all(r["allowed"] is False and r["principal"] == "ana" for r in other)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("principal", ".*"),
        ("principal", "*"),
        ("principal", "%"),
        ("principal", "an?"),
        ("operation", "re[a]d"),
        ("operation", "read|list"),
        ("path", "/**"),
        ("path", ".*"),
        ("path", "%"),
    ],
)
def test_filters_are_literal_never_patterns(
    site: str, sam: httpx.Client, name: str, value: str
) -> None:
    start = time.time()
    with _as(site, "ana") as ana:
        ana.get("/v1/files/read", params={"path": SALARY})
    assert _records(sam, start, **{name: value}) == []


@pytest.mark.parametrize(
    ("name", "text", "sidecar", "why"),
    [
        ("a.md", "# A\n", "classification: [oops\n", "the sidecar is not valid YAML"),
        ("b.md", "---\nclassification: {x: 1}\n---\n# B\n", None, "front matter: "),
    ],
)
def test_labels_that_cannot_be_determined_in_a_shared_mount_read_as_missing(
    site: str, folder: Path, sam: httpx.Client, name: str, text: str, sidecar: str | None, why: str
) -> None:
    """Planted from outside (the workspace refuses to write them): the guard hides the file
    from everybody. In ``/uploads``, a mount every tenant shares, whose document it is cannot
    be told, so a tenant's operator is answered as for a missing file (the tenant boundary
    fails closed; the owner's ``bastion explain`` names the reason: tests/security/
    test_tenant_boundary_operators.py)."""
    (folder / "uploads" / name).write_text(text)
    if sidecar is not None:
        (folder / "uploads" / f"{name}.labels.yaml").write_text(sidecar)
    path = f"/uploads/{name}"
    with _as(site, "lena") as lena:
        assert lena.get("/v1/files/read", params={"path": path}).status_code == 404
    told = sam.get("/v1/explain", params={"user": "lena", "path": path}).json()
    absent = sam.get("/v1/explain", params={"user": "lena", "path": f"/uploads/no-{name}"}).json()
    assert {k: v for k, v in told.items() if k != "path"} == {
        k: v for k, v in absent.items() if k != "path"
    }
    assert "undetermined" not in json.dumps(told) and "everybody" not in json.dumps(told)


def test_every_explanation_agrees_with_what_the_guard_does(
    site: str, folder: Path, sam: httpx.Client
) -> None:
    corpus = folder / "corpus"
    files = sorted("/" + str(p.relative_to(corpus)) for p in corpus.rglob("*") if p.is_file())
    folders = sorted("/" + str(p.relative_to(corpus)) for p in corpus.rglob("*") if p.is_dir())
    assert len(files) > 10 and folders
    users = [u["id"] for u in httpx.get(f"{site}/v1/auth/demo/users").json()["users"]]
    disagree = []
    zoe = _as(site, "zoe")  # tidewater's operator: sam explains larkspur's users only
    for user in users:
        operator = zoe if user in ("tom", "zoe") else sam
        with _as(site, user) as them:
            for path, action, done in [
                *((f, "read", them.get("/v1/files/read", params={"path": f})) for f in files),
                *((d, "list", them.get("/v1/files", params={"path": d})) for d in folders),
            ]:
                told = operator.get(
                    "/v1/explain", params={"user": user, "path": path, "action": action}
                ).json()
                if told["allowed"] != (done.status_code == 200):
                    disagree.append((user, action, path, done.status_code, told["decided_by"]))
    zoe.close()
    assert disagree == []


def test_a_link_is_explained_as_unopened_and_tells_nothing_beyond_it(
    site: str, folder: Path, sam: httpx.Client, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "there.txt").write_text("outside the mount\n")
    (folder / "uploads" / "out").symlink_to(outside)
    with _as(site, "lena") as lena:
        refused = lena.get("/v1/files/read", params={"path": "/uploads/out/there.txt"})
        assert refused.status_code == 422 and "outside the mount" not in refused.text
    told = [
        sam.get("/v1/explain", params={"user": "lena", "path": p}).json()
        for p in ("/uploads/out/there.txt", "/uploads/out/not-there.txt")
    ]
    for answer in told:
        assert answer["allowed"] is False
        assert answer["decided_by"].startswith("the file cannot be opened (unsupported_file)")
        assert "outside the mount" not in json.dumps(answer)
    # whether a file exists beyond the link is not told
    assert {k: v for k, v in told[0].items() if k != "path"} == {
        k: v for k, v in told[1].items() if k != "path"
    }
