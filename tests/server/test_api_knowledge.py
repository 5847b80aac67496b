"""Search, ask (JSON and Server-Sent Events), ingest and the index over real HTTP."""

from __future__ import annotations

import json
import time

import httpx

from .support import Token, auth


def _events(text: str) -> list[tuple[str, dict[str, object]]]:
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_ask_streams_the_answer_then_citations_and_verification(
    client: httpx.Client, token: Token
) -> None:
    h = {**auth(token()), "Accept": "text/event-stream"}
    with client.stream(
        "POST", "/v1/ask", json={"question": "When does the kestrel rota start?"}, headers=h
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = _events(r.read().decode())
    names = [name for name, _ in events]
    assert names[0] == "status" and names[-3:] == ["citations", "verification", "done"]
    assert set(names[1:-3]) == {"answer"}
    answer = "".join(str(data["text"]) for name, data in events if name == "answer")
    assert "Monday" in answer and "[1]" in answer
    citations = dict(events)["citations"]["citations"]
    # the line the answer took ("The kestrel rota starts on Monday."), not the whole chunk
    assert citations == [
        {"n": 1, "path": "/docs/handbook.md", "start_line": 3, "end_line": 3, "lines": [3, 3]}
    ]
    assert dict(events)["verification"]["verified"] is True


def test_ask_refuses_with_no_authorized_documents(client: httpx.Client, token: Token) -> None:
    r = client.post(
        "/v1/ask",
        json={"question": "What is the kestrel bonus?"},
        headers=auth(token("gus", clearance="public")),
    )
    assert r.json()["answer"] == "No document you can read answers this question."
    assert r.json()["citations"] == []


def test_ingest_is_indexed_before_the_response(client: httpx.Client, token: Token) -> None:
    h = auth(token("raj"))
    r = client.post(
        "/v1/ingest",
        data={"path": "/docs/inbox"},
        files=[
            ("file", ("osprey.md", b"# Osprey\n\nThe osprey migration starts in April.\n")),
            ("file", ("wren.txt", b"Wren notes: nothing about birds of prey.\n")),
        ],
        headers=h,
    )
    assert r.status_code == 201, r.text
    assert [f["path"] for f in r.json()["files"]] == [
        "/docs/inbox/osprey.md",
        "/docs/inbox/wren.txt",
    ]
    hits = client.post(
        "/v1/search", json={"query": "osprey migration", "mode": "bm25", "k": 3}, headers=h
    ).json()
    assert hits["hits"][0]["path"] == "/docs/inbox/osprey.md"
    twice = client.post(
        "/v1/ingest", data={"path": "/docs/inbox"}, files={"file": ("osprey.md", b"x")}, headers=h
    )
    assert twice.status_code == 409
    odd = client.post(
        "/v1/ingest", data={"path": "/docs/inbox"}, files={"file": ("..", b"x")}, headers=h
    )
    assert odd.status_code in (400, 404)


def test_ingest_into_a_malformed_folder_is_refused_and_audited(
    client: httpx.Client, token: Token
) -> None:
    r = client.post(
        "/v1/ingest",
        data={"path": "/docs/../../etc"},
        files={"file": ("a.md", b"x")},
        headers=auth(token()),
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_path", r.text
    ops = auth(token("olga", roles=("ops",)))
    records = client.get("/v1/audit", params={"limit": 50}, headers=ops).json()["records"]
    refused = [x for x in records if x["operation"] == "ingest" and x["path"] == "/docs/../../etc"]
    assert len(refused) == 1 and refused[0]["allowed"] is False, records


def test_ingest_into_a_read_only_mount_is_refused(client: httpx.Client, token: Token) -> None:
    r = client.post(
        "/v1/ingest", data={"path": "/ref"}, files={"file": ("a.md", b"x")}, headers=auth(token())
    )
    assert r.status_code == 403 and r.json()["error"]["code"] == "scope_denied"


def test_index_status_and_repair_for_operators(client: httpx.Client, token: Token) -> None:
    staff = client.get("/v1/index/status", headers=auth(token())).json()
    assert staff == {"has_index": True, "modes": ["bm25"]}
    assert client.post("/v1/index/repair", json={}, headers=auth(token())).status_code == 403
    ops = auth(token("olga", roles=("ops",)))
    started = client.post("/v1/index/repair", json={"rebuild": True}, headers=ops)
    assert started.status_code == 202
    deadline = time.monotonic() + 30
    while True:
        job = client.get("/v1/index/status", headers=ops).json()["job"]
        if not job["running"] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert job["running"] is False and job["error"] == "" and job["started_by"] == "olga"
    assert job["done"] == job["total"] > 0


def test_search_modes(client: httpx.Client, token: Token) -> None:
    r = client.get("/v1/search", params={"query": "x", "mode": "psychic"}, headers=auth(token()))
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_field"
    vector = client.get(
        "/v1/search", params={"query": "x", "mode": "vector"}, headers=auth(token())
    )
    assert vector.status_code == 409 and vector.json()["error"]["code"] == "configuration"
