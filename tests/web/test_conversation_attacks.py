"""A hostile principal against the page's conversations, over real HTTP: ids that are no
conversation's id, another principal's (or another tenant's same-named principal's)
conversation answered exactly as a missing one, feedback that is all or nothing, a policy that
hides the conversation files, and questions and notes over their limits that keep nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from bastion import Policy, Rule
from bastion.core.errors import NotFoundError
from bastion.core.paths import VPath
from bastion.server.conversations import area_key
from server.support import running

from .test_chat_api import _everyday, _h, _server

MISSING = "0123456789abcdef"


def _missing_text(conversation: str) -> str:
    return f"no conversation {conversation}: it was deleted, or is not yours"


@pytest.fixture(scope="module")
def app() -> Any:
    return _server(_everyday())


@pytest.fixture(scope="module")
def client(app: Any) -> Iterator[httpx.Client]:
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c


def _chat(client: httpx.Client, who: dict[str, str], question: str, **more: Any) -> Any:
    r = client.post("/v1/chat", json={"question": question, **more}, headers=who)
    assert r.status_code == 200, r.text
    return r.json()


def _stored(app: Any, sub: str, tenant: str = "acme") -> dict[str, bytes]:
    """Every file of ``sub``'s area, read from the conversation store itself."""
    from bastion.core.principal import Principal

    store = app.state.conversations.store
    area = VPath.parse(f"/people/{area_key(Principal.of(sub, tenant=tenant))}")

    async def walk(folder: VPath) -> dict[str, bytes]:
        try:
            entries = await store.list(folder)
        except NotFoundError:
            return {}
        found: dict[str, bytes] = {}
        for e in entries:
            if e.kind.value == "file":
                found[str(e.path)] = await store.read_range(e.path)
            else:
                found |= await walk(e.path)
        return found

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, walk(area)).result()


HOSTILE_IDS = [
    "0123456789abcde\x00",  # NUL
    "0123456789abcdef\n",  # a trailing newline ($ in a pattern can admit it)
    "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19abcdef",  # full-width digits
    "0123456789abcdeF",  # upper case
    "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669abcdef",  # Arabic-Indic digits
    "0123456789abcdef" * 300,  # over-long
    "%2e%2e%2fagent%2f",
    "..%2f..%2fpeople",
    "0123456789abcdef.json",
    "../feedback.jsonl",
]


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_an_id_that_is_no_conversation_id_is_refused_before_any_lookup(
    client: httpx.Client, bad: str
) -> None:
    ana = _h("ana-ids")
    for r in (
        client.get("/v1/conversations/read", params={"conversation": bad}, headers=ana),
        client.post("/v1/chat", json={"question": "x", "conversation": bad}, headers=ana),
        client.post("/v1/conversations/delete", json={"conversation": bad}, headers=ana),
        client.post(
            "/v1/feedback", json={"conversation": bad, "turn": 0, "rating": "right"}, headers=ana
        ),
    ):
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == "bad_field" and "\n" not in error["message"]


def test_anothers_conversation_answers_exactly_as_a_missing_one(
    app: Any, client: httpx.Client
) -> None:
    ana, bo, twin = _h("ana-x"), _h("bo-x"), _h("ana-x", tenant="globex")
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    before = _stored(app, "ana-x")

    def tried(who: dict[str, str], conversation: str) -> list[tuple[int, str]]:
        calls = (
            client.get(
                "/v1/conversations/read", params={"conversation": conversation}, headers=who
            ),
            client.post(
                "/v1/chat", json={"question": "and?", "conversation": conversation}, headers=who
            ),
            client.post(
                "/v1/feedback",
                json={"conversation": conversation, "turn": 0, "rating": "wrong", "note": "x"},
                headers=who,
            ),
            client.post(
                "/v1/conversations/delete", json={"conversation": conversation}, headers=who
            ),
            client.post(
                "/v1/chat",
                json={"question": "and?", "conversation": conversation},
                headers=who | {"Accept": "text/event-stream"},
            ),
        )
        return [(r.status_code, r.text.replace(conversation, "ID")) for r in calls]

    for who in (bo, twin):
        # the same status and body, id aside, as an id that was never given out
        assert tried(who, talk) == tried(who, MISSING)
        assert tried(who, talk)[0] == (404, json.dumps({"error": {"code": "not_found", "message": _missing_text("ID")}}, separators=(",", ":")))  # fmt: skip
    assert _stored(app, "ana-x") == before  # nothing of ana's changed: no turn, rating, delete
    mine = client.get("/v1/conversations/read", params={"conversation": talk}, headers=ana)
    assert [t["feedback"] for t in mine.json()["turns"]] == [None]


def test_a_rating_refused_by_the_policy_leaves_the_turn_unrated() -> None:
    policy = Policy(
        rules=(
            Rule.deny(["write"], "/agent/feedback.jsonl", description="no feedback kept"),
            Rule.allow(["read", "write", "delete", "list", "search"], "/**"),
        )
    )
    app = _server(policy)
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        ana = _h("ana")
        talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
        before = _stored(app, "ana")
        r = client.post(
            "/v1/feedback", json={"conversation": talk, "turn": 0, "rating": "wrong"}, headers=ana
        )
        assert r.status_code == 403 and r.json()["error"]["code"] == "policy_denied"
        # both or neither: the turn does not say it was rated when the rating was not kept
        turns = client.get(
            "/v1/conversations/read", params={"conversation": talk}, headers=ana
        ).json()["turns"]
        assert [t["feedback"] for t in turns] == [None]
        after = _stored(app, "ana")
        assert {p: json.loads(b)["turns"][0]["feedback"] for p, b in after.items()} == {
            p: json.loads(b)["turns"][0]["feedback"] for p, b in before.items()
        }
        assert not any(p.endswith("feedback.jsonl") for p in after)


def test_a_policy_that_hides_the_conversation_files_hides_every_conversation() -> None:
    policy = Policy(
        rules=(
            Rule.deny(["read", "list"], "/agent/conversations/**", description="write-only"),
            Rule.allow(["read", "write", "delete", "list", "search"], "/**"),
        )
    )
    with running(_server(policy)) as url, httpx.Client(base_url=url, timeout=30) as client:
        ana = _h("ana")
        told = _chat(client, ana, "Where does the plover nest?")
        talk = told["conversation"]
        assert client.get("/v1/conversations", headers=ana).json() == {"conversations": []}
        for r in (
            client.get("/v1/conversations/read", params={"conversation": talk}, headers=ana),
            client.post("/v1/chat", json={"question": "and?", "conversation": talk}, headers=ana),
            client.post(
                "/v1/feedback",
                json={"conversation": talk, "turn": 0, "rating": "right"},
                headers=ana,
            ),
        ):
            assert r.status_code == 404
            assert r.json()["error"]["message"] == _missing_text(talk)
            assert "north shingle" not in r.text


def test_questions_and_notes_over_their_limits_keep_nothing(app: Any, client: httpx.Client) -> None:
    ana = _h("ana-big")
    big = client.post("/v1/chat", json={"question": "plover " * 700}, headers=ana)
    assert big.status_code == 400 and big.json()["error"]["code"] == "bad_field"
    assert "plover plover" not in big.text  # the refusal does not echo the question
    assert client.get("/v1/conversations", headers=ana).json() == {"conversations": []}
    assert _stored(app, "ana-big") == {}
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    before = _stored(app, "ana-big")
    for body in (
        {"turn": 0, "rating": "wrong", "note": "n" * 2001},
        {"turn": 0, "rating": "wrong", "note": 5},
        {"turn": 0, "rating": "wrong", "note": None},
        {"turn": 100, "rating": "wrong"},
        {"turn": "0", "rating": "wrong", "extra": "x"},
    ):
        r = client.post("/v1/feedback", json={"conversation": talk, **body}, headers=ana)
        assert r.status_code == 400, (body, r.text)
    assert _stored(app, "ana-big") == before
    # a body far over the request limit is refused before it is read whole
    huge = client.post(
        "/v1/chat",
        content=b'{"question": "' + b"x" * (8 * 1024 * 1024) + b'"}',
        headers=ana | {"Content-Type": "application/json"},
    )
    assert huge.status_code in (400, 413)
    assert _stored(app, "ana-big") == before


def test_the_audit_log_names_the_owner_of_each_conversation_step(client: httpx.Client) -> None:
    ana, bo, ops = _h("ana-au"), _h("bo-au"), _h("olga", roles=("ops",))
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    client.post("/v1/conversations/delete", json={"conversation": talk}, headers=bo)
    records = client.get(
        "/v1/audit", params={"path": f"/agent/conversations/{talk}", "limit": 100}, headers=ops
    ).json()["records"]
    # bo's attempt reached bo's own area only (the same name there): refused, nothing deleted
    mine = [r for r in records if r["principal"] == "ana-au"]
    theirs = [r for r in records if r["principal"] == "bo-au"]
    assert {r["principal"] for r in records} == {"ana-au", "bo-au"}
    assert ("write", True) in {(r["operation"], r["allowed"]) for r in mine}
    assert theirs and not any(r["allowed"] and r["operation"] == "delete" for r in theirs)
    still = client.get("/v1/conversations/read", params={"conversation": talk}, headers=ana)
    assert still.status_code == 200


def test_a_note_cannot_forge_a_line_of_the_feedback_file(app: Any, client: httpx.Client) -> None:
    ana = _h("ana-fb")
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    forged = json.dumps({"id": "x-0", "principal": "ceo", "rating": "right"})
    notes = [f"a\u2028{forged}", f"b\x85{forged}", f"c\u2029{forged}", f"d\r\n{forged}"]
    for note in notes:
        r = client.post(
            "/v1/feedback",
            json={"conversation": talk, "turn": 0, "rating": "wrong", "note": note},
            headers=ana,
        )
        assert r.status_code == 201, r.text
    (kept,) = [b for p, b in _stored(app, "ana-fb").items() if p.endswith("/feedback.jsonl")]
    lines = kept.decode().splitlines()  # as a reader splitting on every line boundary sees it
    assert [json.loads(line)["note"] for line in lines] == notes
    assert {json.loads(line)["principal"] for line in lines} == {"ana-fb"}


def _asked_in(world: Any, questions: list[tuple[str, str]]) -> list[Any]:
    """sid's answers in ``world``: chat (the turn's id aside), as JSON and as events, and the
    library's own ``/v1/ask``, for each (question, path)."""
    sid, told = _h("sid"), []
    with running(world) as url, httpx.Client(base_url=url, timeout=30) as c:
        for question, path in questions:
            body = {"question": question, "path": path}
            chat = c.post("/v1/chat", json=body, headers=sid)
            ask = c.post("/v1/ask", json=body, headers=sid)
            streamed = c.post("/v1/chat", json=body, headers=sid | {"Accept": "text/event-stream"})
            answer = chat.json()
            if chat.status_code == 200:
                answer.pop("conversation")
                answer = {k: v for k, v in answer.items() if k not in ("turn", "kept", "asked")}
            events = streamed.text.split("\n\n", 1)[-1]  # after the event naming the id
            told.append((chat.status_code, answer, ask.status_code, ask.json(), events))
    return told


def test_chat_answers_what_the_library_answers_whatever_is_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import web.test_chat_api as chat_api

    questions = [
        ("What is the plover bonus?", "/"),
        ("What is the plover bonus?", "/docs/pay.md"),
        ("percent of salary", "/docs"),
        ("Where does the plover nest?", "/docs/plover.md"),
        ("What is the plover bonus?", "/docs/../.."),
    ]
    with_hidden = _asked_in(_server(_everyday()), questions)
    monkeypatch.delitem(chat_api.DOCS, "/docs/pay.md")
    without = _asked_in(_server(_everyday()), questions)
    assert with_hidden == without  # two worlds differing only by what sid may not read
    for status, answer, ask_status, ask, _ in with_hidden:
        assert status == ask_status
        assert answer == ask  # the chat adds its turn, nothing else


def test_a_listing_reads_only_the_newest_conversations() -> None:
    from bastion.core.principal import Principal
    from bastion.server.conversations import MAX_LISTED, new_conversation

    app = _server(_everyday())
    book = app.state.conversations
    who = Principal.of("ana-many", tenant="acme", roles=("staff",), clearance="internal")
    made: list[str] = []

    async def keep() -> None:
        own = book.workspace(who, app.state.bastion.workspace.policy)
        for n in range(MAX_LISTED + 5):
            data = new_conversation(f"question {n}", float(n))
            await book.save(own, data, None)
            made.append(data["id"])

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, keep()).result()
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        ana = _h("ana-many")
        listed = client.get("/v1/conversations", headers=ana).json()["conversations"]
        assert [c["id"] for c in listed] == made[::-1][:MAX_LISTED]
        oldest = client.get("/v1/conversations/read", params={"conversation": made[0]}, headers=ana)
        assert oldest.status_code == 200 and oldest.json()["title"] == "question 0"
