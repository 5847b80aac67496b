"""The chat's HTTP side: a conversation is a file of its owner's own area, reached by no one
else (another principal, another tenant with the same name); ids cannot name a path; the
policy decides whether a conversation is kept; what a principal may not read never reaches its
answer or its conversation; feedback is kept in the documented format; and every step is in the
audit log under its principal."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from bastion import Labels, MemoryStore, Mount, Policy, Rule
from bastion.core.errors import ConfigurationError
from bastion.core.models import Action
from bastion.core.paths import VPath
from bastion.core.principal import Principal
from bastion.governance.identity import IdentityConfig, VerificationKey
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.server import ServerSettings, create_app
from bastion.server.conversations import new_conversation
from bastion.server.loading import ServerFile, opened_app
from bastion.workspace import Workspace
from server.reload_support import SECRET as SECRET_TEXT
from server.reload_support import workspace_file
from server.support import running

SECRET = secrets.token_bytes(64)
IDENTITY = IdentityConfig(
    issuer="https://id.test",
    audience="bastion-api",
    keys=(VerificationKey.hmac(SECRET, algorithm="HS256", kid="k1"),),
)
DOCS = {
    "/docs/plover.md": ("# Plover\n\nThe plover nests on the north shingle.\n", "internal", ()),
    "/docs/pay.md": (
        "# Pay\n\nThe plover bonus is 12 percent of salary.\n",
        "confidential",
        ("hr",),
    ),
}
Ask = Callable[..., httpx.Response]


def _token(
    sub: str, *, roles: tuple[str, ...] = ("staff",), tenant: str = "acme", **more: Any
) -> str:
    now = int(time.time())
    claims = {
        "iss": IDENTITY.issuer,
        "aud": IDENTITY.audience,
        "sub": sub,
        "tenant": tenant,
        "roles": list(roles),
        "clearance": more.pop("clearance", "internal"),
        "iat": now,
        "exp": now + 300,
    }
    return jwt.encode(claims, SECRET, algorithm="HS256", headers={"kid": "k1"})


def _h(sub: str, **kw: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {_token(sub, **kw)}"}


def _server(policy: Policy) -> Any:
    store = MemoryStore()
    for path, (text, level, roles) in DOCS.items():
        front = f"---\nclassification: {level}\n" + (
            f"roles: [{', '.join(roles)}]\n" if roles else ""
        )
        asyncio.run(
            store.write(
                VPath.parse(path).relative_to(VPath.parse("/docs")),
                (front + "---\n" + text).encode(),
            )
        )
    ws = Workspace(
        [Mount.of("/docs", store, "read_write", labels=Labels(classification="internal"))],
        policy=policy,
        knowledge=Knowledge(MemoryIndex()),
    )
    ws.sync().rebuild_index()
    return create_app(ws, identity=IDENTITY)


def _everyday() -> Policy:
    return Policy(
        rules=(
            Rule.allow(["read", "write", "delete", "list", "search"], "/**"),
            Rule.allow([Action.AUDIT], "/**", roles={"ops"}),
        )
    )


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with running(_server(_everyday())) as url:
        yield url


@pytest.fixture
def client(site: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site, timeout=30) as c:
        yield c


def _chat(client: httpx.Client, who: dict[str, str], question: str, **more: Any) -> Any:
    r = client.post("/v1/chat", json={"question": question, **more}, headers=who)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_conversation_is_reached_by_its_owner_only(client: httpx.Client) -> None:
    ana, bo, other_ana = _h("ana"), _h("bo"), _h("ana", tenant="globex")
    first = _chat(client, ana, "Where does the plover nest?")
    assert first["kept"] and first["status"] == "answered" and "north shingle" in first["answer"]
    talk = first["conversation"]
    for who in (bo, other_ana):  # another principal; the same name in another tenant
        assert client.get("/v1/conversations", headers=who).json() == {"conversations": []}
        read = client.get("/v1/conversations/read", params={"conversation": talk}, headers=who)
        asked = client.post(
            "/v1/chat", json={"question": "And?", "conversation": talk}, headers=who
        )
        rated = client.post(
            "/v1/feedback", json={"conversation": talk, "turn": 0, "rating": "wrong"}, headers=who
        )
        gone = client.post("/v1/conversations/delete", json={"conversation": talk}, headers=who)
        for r in (read, asked, rated, gone):
            assert r.status_code == 404, r.text
            assert r.json()["error"]["message"] == (
                f"no conversation {talk}: it was deleted, or is not yours"
            )
            assert "plover" not in r.text
    mine = client.get("/v1/conversations/read", params={"conversation": talk}, headers=ana).json()
    assert [t["question"] for t in mine["turns"]] == ["Where does the plover nest?"]
    assert [t["feedback"] for t in mine["turns"]] == [None]


@pytest.mark.parametrize(
    "bad", ["../x", "..", "/agent/feedback", "0123456789ABCDEF", "0123456789abcdef0", "", "a b"]
)
def test_a_conversation_id_cannot_name_a_path(client: httpx.Client, bad: str) -> None:
    ana = _h("ana")
    for r in (
        client.get("/v1/conversations/read", params={"conversation": bad or " "}, headers=ana),
        client.post("/v1/chat", json={"question": "x", "conversation": bad}, headers=ana),
        client.post("/v1/conversations/delete", json={"conversation": bad}, headers=ana),
    ):
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] in ("bad_field", "missing_field")


def test_a_hidden_document_never_reaches_the_answer_or_the_conversation(
    client: httpx.Client,
) -> None:
    hr, staff = _h("hana", roles=("hr",), clearance="confidential"), _h("sid")
    seen = _chat(client, hr, "What is the plover bonus?")
    assert "12 percent" in seen["answer"]
    refused = _chat(client, staff, "What is the plover bonus?")
    assert refused["status"] != "answered" and refused["citations"] == []
    assert "Verified" not in refused["verification"]["verdict"]
    assert not refused["verification"]["verified"]
    # a follow-up asked with the earlier question as its context stays within what sid reads
    follow = _chat(client, staff, "and the percent?", conversation=refused["conversation"])
    assert "12 percent" not in json.dumps(follow)
    kept = client.get(
        "/v1/conversations/read",
        params={"conversation": refused["conversation"]},
        headers=staff,
    ).json()
    assert "12 percent" not in json.dumps(kept) and "pay.md" not in json.dumps(kept)


def test_a_follow_up_is_asked_after_the_previous_question(client: httpx.Client) -> None:
    ana = _h("ana-f")
    first = _chat(client, ana, "Where does the plover nest?")
    follow = _chat(client, ana, "and when?", conversation=first["conversation"])
    assert follow["turn"] == 1
    # "and when?" names nothing of its own to look for: it is asked after the first
    assert follow["asked"] == "Where does the plover nest? and when?"
    # a question that stands alone is asked alone
    alone = _chat(client, ana, "What is the plover bonus?", conversation=first["conversation"])
    assert alone["asked"] == "What is the plover bonus?"


def test_the_answer_streams_as_events_and_the_turn_is_kept(client: httpx.Client) -> None:
    ana = _h("ana-s")
    r = client.post(
        "/v1/chat",
        json={"question": "Where does the plover nest?"},
        headers=ana | {"Accept": "text/event-stream"},
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    names = [
        line.removeprefix("event: ") for line in r.text.splitlines() if line.startswith("event: ")
    ]
    assert names[:2] == ["conversation", "status"] and names[-3:] == [
        "citations",
        "verification",
        "done",
    ]
    assert set(names[2:-3]) == {"answer"}
    listed = client.get("/v1/conversations", headers=ana).json()["conversations"]
    assert [(c["title"], c["turns"]) for c in listed] == [("Where does the plover nest?", 1)]


def test_feedback_is_checked_and_kept_in_the_documented_format(client: httpx.Client) -> None:
    ana = _h("ana-r")
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    for body, code in (
        ({"turn": 1, "rating": "right"}, 404),
        ({"turn": 0, "rating": "great"}, 400),
        ({"turn": -1, "rating": "right"}, 400),
        ({"turn": 0, "rating": "wrong", "note": "x" * 2001}, 400),
    ):
        r = client.post("/v1/feedback", json={"conversation": talk, **body}, headers=ana)
        assert r.status_code == code, (body, r.text)
    r = client.post(
        "/v1/feedback",
        json={"conversation": talk, "turn": 0, "rating": "wrong", "note": "the east shingle"},
        headers=ana,
    )
    assert r.status_code == 201 and r.json()["stored"] == "/agent/feedback.jsonl"
    turns = client.get("/v1/conversations/read", params={"conversation": talk}, headers=ana).json()[
        "turns"
    ]
    assert turns[0]["feedback"] == "wrong"


def test_every_step_is_audited_under_its_principal(client: httpx.Client) -> None:
    ana, ops = _h("ana-a"), _h("olga", roles=("ops",))
    talk = _chat(client, ana, "Where does the plover nest?")["conversation"]
    client.post("/v1/conversations/delete", json={"conversation": talk}, headers=ana)
    records = client.get(
        "/v1/audit", params={"principal": "ana-a", "limit": 50}, headers=ops
    ).json()["records"]
    steps = [(r["operation"], r["path"]) for r in records]
    assert ("ask", "/") in steps
    assert ("write", f"/agent/conversations/{talk}.json") in steps
    assert ("delete", f"/agent/conversations/{talk}.json") in steps
    assert {r["principal"] for r in records} == {"ana-a"}


def test_a_policy_that_denies_the_area_keeps_nothing() -> None:
    policy = Policy(
        rules=(
            Rule.deny(["write"], "/agent/**", description="no conversations kept here"),
            Rule.allow(["read", "write", "delete", "list", "search"], "/**"),
        )
    )
    with running(_server(policy)) as url, httpx.Client(base_url=url, timeout=30) as client:
        ana = _h("ana")
        told = _chat(client, ana, "Where does the plover nest?")
        assert told["status"] == "answered" and told["kept"] is False
        assert told["notes"][-1].startswith("not kept: ")
        assert client.get("/v1/conversations", headers=ana).json() == {"conversations": []}


def test_the_conversation_folder_is_a_checked_setting() -> None:
    assert ServerSettings.from_dict({"conversations": "chats"}).conversations == "chats"
    for bad in ("", "  ", 3):
        with pytest.raises(ConfigurationError, match="conversations must be a folder path"):
            ServerSettings.from_dict({"conversations": bad})


def test_a_full_conversation_asks_for_a_new_one() -> None:
    app = _server(_everyday())
    book = app.state.conversations
    who = Principal.of("ana", tenant="acme", roles=("staff",), clearance="internal")
    full = new_conversation("Where does the plover nest?", time.time())
    turn = {"question": "q", "asked": "q", "answer": "a", "status": "answered", "citations": []}
    full["turns"] = [turn | {"verification": {}, "mode": "bm25", "notes": [], "time": 0.0}] * 100

    async def keep() -> None:
        await book.save(book.workspace(who, app.state.bastion.workspace.policy), full, None)

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, keep()).result()
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        more = client.post(
            "/v1/chat",
            json={"question": "And?", "conversation": full["id"]},
            headers=_h("ana"),
        )
        assert more.status_code == 409
        assert more.json()["error"]["message"] == (
            "a conversation keeps 100 questions; start a new one"
        )
        assert (
            client.get("/v1/conversations", headers=_h("ana")).json()["conversations"][0]["turns"]
            == 100
        )


def test_a_conversation_folder_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    config = workspace_file(tmp_path, index=False)
    config.write_text(config.read_text() + 'conversations = "bastion.toml/chats"\n')
    with (
        pytest.raises(ConfigurationError, match="server: conversations: cannot make the folder"),
        opened_app(ServerFile.read(config, env={"BASTION_TEST_SECRET": SECRET_TEXT})),
    ):
        pass
