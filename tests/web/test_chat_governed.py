"""The chat as people use it, in Chromium, for people who may read different documents: a
streamed answer, its citations opening the cited lines, a follow-up, the conversation kept
and listed for its owner only, a refusal shown as a refusal, copy, and feedback kept in the
owner's own area in the documented format."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from starlette.applications import Starlette

from bastion.core.paths import VPath
from bastion.core.principal import Principal
from bastion.server.conversations import area_key
from bastion.server.demo import demo_app
from server.support import running

from .people import (
    PHONE,
    Shots,
    Visit,
    demo_token,
    launched,
    no_overflow,
    serious_violations,
    sign_in_demo,
    visiting,
)

SALARY = "What is the salary band for a senior engineer?"


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    yield from launched()


@pytest.fixture
def visits(chromium_browser: Browser) -> Iterator[Callable[..., Visit]]:
    yield from visiting(chromium_browser)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Starlette, str]]:
    app = demo_app(tmp_path_factory.mktemp("demo"))
    with running(app) as url:
        yield app, url


def _ask(page: Page, question: str) -> Any:
    """Type ``question`` and press Enter; the new turn once its verdict is shown."""
    before = page.locator("#turns > li").count()
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    turn = page.locator("#turns > li").nth(before)
    expect(turn.locator(".verdict")).not_to_be_empty(timeout=15_000)
    return turn


def _kept(app: Starlette, who: Principal, name: str) -> bytes:
    """A file of ``who``'s own area, read from the conversation store itself."""
    store = app.state.conversations.store
    path = VPath.parse(f"/people/{area_key(who)}/{name}")
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        return pool.submit(asyncio.run, store.read_all(path)).result()


def test_two_people_chat_and_each_sees_only_their_own(
    demo: tuple[Starlette, str], visits: Callable[..., Visit], tmp_path: Path
) -> None:
    app, site = demo
    shots = Shots(tmp_path)
    mei = visits(site).page
    sign_in_demo(mei, site, "mei")
    who = mei.locator("#whoami")
    expect(who).to_contain_text("tenant larkspur")
    expect(who).to_contain_text("roles")
    expect(who).to_contain_text("clearance confidential")
    expect(mei.locator("#question")).to_be_focused()

    first = _ask(mei, SALARY)
    expect(first.locator(".answer")).to_contain_text("$128,000")
    expect(first.locator(".verdict strong")).to_have_text("Verified")
    expect(first.locator(".citations li")).to_have_text(["/larkspur/hr/salary-bands.md:11-13"])
    conversation = mei.evaluate("location.hash").removeprefix("#/chat/")
    assert len(conversation) == 16

    follow = _ask(mei, "And for a staff engineer?")
    expect(follow.locator(".answer")).to_contain_text("$150,000")
    expect(mei.locator("#conversation-list li")).to_have_count(1)
    expect(mei.locator("#conversation-list li")).to_contain_text("2 questions")
    shots.take(mei, "chat-answer", doc=True)
    assert serious_violations(mei) == []

    # The numbered reference opens the cited lines (in Files), and Back returns to the talk.
    first.locator(".answer .ref").first.focus()
    mei.keyboard.press("Enter")
    expect(mei.locator("#files")).to_be_visible()
    expect(mei.locator("#files")).to_contain_text("128,000")
    assert "lines=11-13" in mei.evaluate("location.hash")
    shots.take(mei, "chat-cited-lines", doc=True)
    mei.go_back()
    expect(mei.locator("#turns > li")).to_have_count(2)
    expect(mei.locator("#turns")).to_contain_text("$150,000")

    # Copy puts the answer and its citations on the clipboard.
    mei.locator("#turns > li").first.get_by_role("button", name="Copy").click()
    copied = mei.evaluate("navigator.clipboard.readText()")
    assert "$128,000" in copied and "/larkspur/hr/salary-bands.md:11-13" in copied

    # Feedback: right on the first answer, missing (with a note) on the second.
    mei.locator("#turns > li").first.get_by_role("button", name="Right").click()
    expect(mei.locator("#turns > li").first.get_by_role("button", name="Right")).to_have_attribute(
        "aria-pressed", "true"
    )
    mei.locator("#turns > li").nth(1).get_by_role("button", name="Missing").click()
    mei.locator("dialog input").fill("it should give the level too")
    mei.locator("dialog").get_by_role("button", name="OK").click()
    expect(
        mei.locator("#turns > li").nth(1).get_by_role("button", name="Missing")
    ).to_have_attribute("aria-pressed", "true")

    token = demo_token(site, "mei")
    kept = httpx.get(
        f"{site}/v1/conversations/read",
        params={"conversation": conversation},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    assert [t["feedback"] for t in kept["turns"]] == ["right", "missing"]
    mei_principal = app.state.bastion.auth.demo.users["mei"]
    lines = [json.loads(x) for x in _kept(app, mei_principal, "feedback.jsonl").splitlines()]
    assert [(x["rating"], x["id"]) for x in lines] == [
        ("right", f"{conversation}-0"),
        ("missing", f"{conversation}-1"),
    ]
    assert lines[1]["note"] == "it should give the level too"
    assert lines[0]["cites"] == ["/larkspur/hr/salary-bands.md"]
    assert lines[0]["question"] == SALARY

    # zoe, another tenant: none of mei's conversations, and her own answer from her documents.
    zoe = visits(site).page
    sign_in_demo(zoe, site, "zoe")
    expect(zoe.locator("#conversations-note")).to_have_text("No conversation yet: ask a question.")
    answer = _ask(zoe, SALARY)
    expect(answer.locator(".answer")).to_contain_text("$92,000")
    expect(answer.locator(".citations li")).to_have_text(["/tidewater/hr/salary-bands.md:11-13"])
    zoe.evaluate(f"location.hash = '#/chat/{conversation}'")
    expect(zoe.locator("#turns")).to_contain_text("it was deleted, or is not yours")
    for text in ("128,000", "150,000", "larkspur"):
        assert text not in zoe.locator("#chat").inner_text()


def test_a_refusal_is_shown_as_a_refusal_on_a_phone(
    demo: tuple[Starlette, str], visits: Callable[..., Visit], tmp_path: Path
) -> None:
    _, site = demo
    shots = Shots(tmp_path)
    ana = visits(site, PHONE).page
    sign_in_demo(ana, site, "ana")
    turn = _ask(ana, SALARY)
    expect(turn.locator(".answer")).to_have_text("No document you can read answers this question.")
    expect(turn.locator(".verdict strong")).to_have_text("Not answered")
    expect(turn.locator(".verdict")).to_have_class("verdict refused")
    expect(turn.locator(".citations li")).to_have_count(0)
    assert "Verified" not in turn.inner_text()
    assert "128,000" not in ana.content() and "92,000" not in ana.content()
    assert no_overflow(ana)
    shots.take(ana, "chat-refusal-phone", doc=True)
    assert serious_violations(ana) == []


def test_a_conversation_is_deleted_after_confirming(
    demo: tuple[Starlette, str], visits: Callable[..., Visit]
) -> None:
    _, site = demo
    sam = visits(site).page
    sign_in_demo(sam, site, "sam")
    _ask(sam, "How many days of annual leave do employees get?")
    item = sam.locator("#conversation-list li")
    expect(item).to_have_count(1)
    item.get_by_role("button").click()
    sam.locator("dialog").get_by_role("button", name="Cancel").click()
    expect(item).to_have_count(1)
    item.get_by_role("button").click()
    sam.locator("dialog").get_by_role("button", name="Delete").click()
    expect(sam.locator("#conversations-note")).to_have_text("No conversation yet: ask a question.")
    expect(sam.locator("#turns > li")).to_have_count(0)


def test_markup_in_a_question_stays_text(
    demo: tuple[Starlette, str], visits: Callable[..., Visit], tmp_path: Path
) -> None:
    _, site = demo
    mei = visits(site).page
    sign_in_demo(mei, site, "mei")
    attack = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> salary band?'
    turn = _ask(mei, attack)
    expect(turn.locator(".question")).to_have_text(attack)
    expect(mei.locator("#conversation-list a").first).to_contain_text("<img src=x")
    mei.reload()
    sign_in_demo(mei, site, "mei")
    mei.locator("#conversation-list a").first.click()
    expect(mei.locator("#turns .question").first).to_have_text(attack)
    assert mei.evaluate("window.pwned") is None
    assert mei.locator("#chat img, #chat script").count() == 0
    Shots(tmp_path).take(mei, "chat-hostile", doc=True)
