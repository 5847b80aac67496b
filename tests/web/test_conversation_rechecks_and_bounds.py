"""Stored conversations, as the Chat tab reads them back over real HTTP (the demo server):

* an answer is shown again only while its principal may still read every document it cites:
  after the document's labels tighten (or it is deleted) the answer is withheld on reading
  back, in the same neutral words either way, and the feedback line of a rating holds those
  words, not the answer (before 2026-11-28 the stored text quoting the document came back);
* the store is bounded per principal: conversations kept, bytes of one conversation, bytes of
  the feedback file, each past its bound a clear one-line answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from bastion.core.paths import VPath
from bastion.core.principal import Principal
from bastion.server import ServerSettings
from bastion.server.conversations import WITHHELD, area_key
from bastion.server.demo import demo_app
from server.support import running

from .people import demo_token

CODE = "The kestrel gate code is 4471 and opens the north yard."
QUESTION = "What is the kestrel gate code?"


def _as(site: str, user: str) -> httpx.Client:
    bearer = {"Authorization": f"Bearer {demo_token(site, user)}"}
    return httpx.Client(base_url=site, timeout=30, headers=bearer)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[Starlette, str, Path]]:
    app = demo_app(tmp_path)
    with running(app) as url:
        yield app, url, tmp_path


def _ask_about(ana: httpx.Client, name: str) -> dict[str, Any]:
    wrote = ana.post("/v1/files/write", json={"path": f"/uploads/{name}", "content": CODE})
    assert wrote.status_code == 201, wrote.text
    answered = ana.post("/v1/chat", json={"question": QUESTION})
    assert answered.status_code == 200, answered.text
    body: dict[str, Any] = answered.json()
    assert body["kept"] is True and "4471" in body["answer"]
    assert [c["path"] for c in body["citations"]] == [f"/uploads/{name}"]
    return body


def _read_back(ana: httpx.Client, conversation: str) -> dict[str, Any]:
    r = ana.get("/v1/conversations/read", params={"conversation": conversation})
    assert r.status_code == 200, r.text
    turn: dict[str, Any] = r.json()["turns"][0]
    return turn


def _tighten(folder: Path, name: str) -> None:
    """Labels tightened from outside the workspace (an editor, a sync): restricted now."""
    (folder / "uploads" / name).write_text(f"---\nclassification: restricted\n---\n{CODE}\n")


def test_an_answer_citing_a_document_no_longer_readable_is_withheld(
    demo: tuple[Starlette, str, Path],
) -> None:
    app, site, folder = demo
    with _as(site, "ana") as ana:
        hidden = _ask_about(ana, "gate.md")
        assert "4471" in _read_back(ana, hidden["conversation"])["answer"]  # readable: shown
        _tighten(folder, "gate.md")
        assert ana.get("/v1/files/read", params={"path": "/uploads/gate.md"}).status_code == 404
        withheld = _read_back(ana, hidden["conversation"])
        gone = _ask_about(ana, "yard.md")
        assert ana.post("/v1/files/delete", json={"path": "/uploads/yard.md"}).status_code == 200
        deleted = _read_back(ana, gone["conversation"])
        rated = ana.post(
            "/v1/feedback",
            json={"conversation": hidden["conversation"], "turn": 0, "rating": "wrong"},
        )
        assert rated.status_code == 201, rated.text
    assert withheld["answer"] == WITHHELD and withheld["citations"] == []
    assert withheld["question"] == QUESTION  # the principal's own words stay
    text = json.dumps(withheld)
    for leak in ("4471", "kestrel gate code is", "gate.md", "restricted", "classification"):
        assert leak not in text.replace(QUESTION, "")
    # hidden since, or deleted: the same words (which one is not told)
    same = ("answer", "status", "citations", "verification", "notes")
    assert {k: withheld[k] for k in same} == {k: deleted[k] for k in same}
    # the rating's feedback line holds the answer as it reads now
    line = json.loads(_kept(app, Principal.of("ana"), "feedback.jsonl").splitlines()[-1])
    assert line["answer"] == WITHHELD and line["cites"] == [] and "4471" not in json.dumps(line)
    # the stored turn is unchanged: an access restored shows it again
    (folder / "uploads" / "gate.md").write_text(CODE + "\n")
    with _as(site, "ana") as ana:
        assert "4471" in _read_back(ana, hidden["conversation"])["answer"]


def _kept(app: Starlette, who: Principal, name: str) -> bytes:
    """A file of ``who``'s own area, read from the conversation store itself."""
    store = app.state.conversations.store
    path = VPath.parse(f"/people/{area_key(_demo(who))}/{name}")
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, store.read_all(path)).result()


def _demo(who: Principal) -> Principal:
    from bastion.demo.corpus import users

    return next(u.principal for u in users() if u.id == who.id)


def _bounded(tmp_path: Path, **bounds: int) -> Starlette:
    return demo_app(tmp_path, settings=ServerSettings(demo_login=True, **bounds))


def _new(client: httpx.Client, question: str = "What is the leave policy?") -> httpx.Response:
    return client.post("/v1/chat", json={"question": question})


def test_a_principal_keeps_a_bounded_number_of_conversations(tmp_path: Path) -> None:
    with (
        running(_bounded(tmp_path, max_conversations=2)) as site,
        _as(site, "ana") as ana,
        _as(site, "raj") as raj,
    ):
        first, second = _new(ana), _new(ana)
        assert first.status_code == second.status_code == 200
        third = _new(ana)
        assert third.status_code == 413
        message = third.json()["error"]["message"]
        assert message == (
            "you keep 2 conversations, the most this server allows "
            "(max_conversations = 2); delete one to start another"
        )
        listed = ana.get("/v1/conversations").json()["conversations"]
        assert len(listed) == 2  # nothing was written for the refused one
        # a follow-up in a kept conversation is not a new one
        more = ana.post(
            "/v1/chat",
            json={"question": "and sick days?", "conversation": first.json()["conversation"]},
        )
        assert more.status_code == 200 and more.json()["kept"] is True
        assert _new(raj).status_code == 200  # the bound is per principal
        gone = ana.post(
            "/v1/conversations/delete", json={"conversation": second.json()["conversation"]}
        )
        assert gone.status_code == 200
        assert _new(ana).status_code == 200


def test_one_conversation_is_bounded_in_bytes(tmp_path: Path) -> None:
    with running(_bounded(tmp_path, max_conversation_bytes=600)) as site, _as(site, "ana") as ana:
        answered = _new(ana, "What is the leave policy for employees?")
        assert answered.status_code == 200  # answered, not kept
        body = answered.json()
        assert body["kept"] is False
        assert any(
            n.startswith("not kept: this conversation would hold ")
            and n.endswith(
                " bytes, over the 600 this server keeps (max_conversation_bytes); "
                "start a new conversation"
            )
            for n in body["notes"]
        ), body["notes"]
        assert ana.get("/v1/conversations").json()["conversations"] == []


def test_the_feedback_file_is_bounded(tmp_path: Path) -> None:
    with running(_bounded(tmp_path, max_feedback_bytes=1)) as site, _as(site, "ana") as ana:
        kept = _new(ana).json()["conversation"]
        rate = {"conversation": kept, "turn": 0, "rating": "right"}
        assert ana.post("/v1/feedback", json=rate).status_code == 201
        refused = ana.post("/v1/feedback", json=rate | {"rating": "wrong"})
        assert refused.status_code == 413
        message = refused.json()["error"]["message"]
        assert message.startswith("your feedback file holds ") and "\n" not in message
        assert message.endswith("(max_feedback_bytes = 1); an operator collects it")
        turn = ana.get("/v1/conversations/read", params={"conversation": kept}).json()["turns"][0]
        assert turn["feedback"] == "right"  # the refused rating left the turn as it was


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_conversations", 0),
        ("max_conversations", True),
        ("max_conversation_bytes", -1),
        ("max_feedback_bytes", "1"),
    ],
)
def test_bounds_are_checked_when_the_settings_are_read(key: str, value: object) -> None:
    from bastion.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as caught:
        ServerSettings.from_dict({key: value})
    assert str(caught.value).startswith(f"server: {key} must be a positive")


async def test_the_library_withholds_as_the_api_does() -> None:
    """``ConversationBook.read`` (what the endpoint calls), over a plain workspace: a rule added
    since hides the cited document, and the answer is withheld for that principal only."""
    from bastion import MemoryStore, Mount, Policy, Rule, Workspace
    from bastion.core.audit import MemoryAuditSink
    from bastion.server.conversations import ConversationBook, new_conversation

    docs = MemoryStore()
    await docs.write(VPath.parse("/gate.md"), CODE.encode())
    sink = MemoryAuditSink()
    ana = Principal.of("ana", roles={"staff"})
    rules = (Rule.allow("*", "/**"),)
    ws = Workspace([Mount.of("/docs", docs)], policy=Policy(rules=rules), audit=sink)
    book = ConversationBook(MemoryStore(), sink)
    view = ws.with_principal(ana)
    own = book.workspace(ana, view.policy)
    data = new_conversation(QUESTION, 1.0)
    cite = {"n": 1, "path": "/docs/gate.md", "start_line": 1, "end_line": 1, "lines": [1, 1]}
    data["turns"].append(
        {"question": QUESTION, "asked": QUESTION, "time": 1.0, "feedback": None,
         "answer": CODE + " [1]", "status": "answered", "citations": [cite],
         "verification": {"verified": True, "verdict": "Verified", "problems": []},
         "mode": "bm25", "notes": []}
    )  # fmt: skip
    await book.save(own, data, None)
    assert (await book.read(view, own, data["id"]))["turns"][0]["answer"] == CODE + " [1]"
    tightened = Policy(rules=(Rule.deny("read", "/docs/gate.md"), *rules))
    later = Workspace([Mount.of("/docs", docs)], policy=tightened, audit=sink)
    turn = (await book.read(later.with_principal(ana), own, data["id"]))["turns"][0]
    assert turn["answer"] == WITHHELD and turn["citations"] == [] and turn["notes"] == []
    assert turn["status"] == "withheld" and "4471" not in json.dumps(turn)
    # the checks were made on ana's behalf: internal records, not her requests
    checks = [r for r in sink.records if r.operation == "exists"]
    assert checks and all(r.internal for r in checks)
