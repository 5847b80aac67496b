"""The web page in a real browser: Playwright driving Debian's Chromium (``make browser``
installs both; nothing is downloaded at run time). Each step saves a screenshot under the
test's temp folder, and the test checks it: a PNG of the viewport's size, and the elements
that step is about present on the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from bastion.server.demo import demo_app
from web.people import Shots, launched

from .support import running

QUESTION = "What is the salary band for a senior engineer?"
DESKTOP = {"width": 1200, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launched()


def _sign_in_with_keyboard(page: Page, site: str, user: str) -> None:
    page.goto(site)
    expect(page.locator("#demo-form")).to_be_visible()
    page.locator("#demo-user").focus()
    page.locator("#demo-user").select_option(user)
    page.keyboard.press("Tab")  # to "Sign in as this user"
    page.keyboard.press("Enter")
    expect(page.locator("#whoami")).to_contain_text(f"Signed in as {user}")
    expect(page.locator("#question")).to_be_focused()


def _ask(page: Page, question: str) -> None:
    page.keyboard.type(question)
    page.keyboard.press("Enter")
    expect(page.locator("#turns .verdict").last).not_to_be_empty(timeout=15_000)


def test_two_users_ask_the_same_question(browser: Browser, site: str, tmp_path: Path) -> None:
    shots = Shots(tmp_path)
    mei = browser.new_page(viewport=DESKTOP)
    _sign_in_with_keyboard(mei, site, "mei")
    shots.take(mei, "mei-signed-in")
    _ask(mei, QUESTION)
    expect(mei.locator("#turns .answer")).to_contain_text("$128,000")
    expect(mei.locator("#turns .citations li")).to_have_count(1)
    expect(mei.locator("#turns .citations li")).to_have_text("/larkspur/hr/salary-bands.md:11-13")
    shots.take(mei, "mei-answer")
    # The numbered reference in the answer opens the cited lines.
    mei.locator("#turns .answer .ref").first.focus()
    mei.keyboard.press("Enter")
    expect(mei.locator("#viewer-path")).to_have_text("/larkspur/hr/salary-bands.md:11-13")
    expect(mei.locator("#viewer-text")).to_contain_text("128,000")
    shots.take(mei, "mei-cited-lines")

    zoe = browser.new_page(viewport=DESKTOP)
    _sign_in_with_keyboard(zoe, site, "zoe")
    _ask(zoe, QUESTION)
    expect(zoe.locator("#turns .answer")).to_contain_text("$92,000")
    expect(zoe.locator("#turns .citations li")).to_have_text("/tidewater/hr/salary-bands.md:11-13")
    assert "128,000" not in zoe.locator("#turns .answer").inner_text()
    shots.take(zoe, "zoe-answer")

    ana = browser.new_page(viewport=DESKTOP)
    _sign_in_with_keyboard(ana, site, "ana")
    _ask(ana, QUESTION)
    expect(ana.locator("#turns .answer")).to_have_text(
        "No document you can read answers this question."
    )
    expect(ana.locator("#turns .citations li")).to_have_count(0)
    shots.take(ana, "ana-refused")
    assert len(shots.taken) == 5


def test_operators_see_audit_and_index_on_a_phone(
    browser: Browser, site: str, tmp_path: Path
) -> None:
    shots = Shots(tmp_path)
    sam = browser.new_page(viewport=PHONE)
    _sign_in_with_keyboard(sam, site, "sam")
    overflow = sam.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    shots.take(sam, "phone-signed-in")
    sam.locator('nav button[data-tab="admin"]').click()
    sam.locator("#repair").click()
    expect(sam.locator("#index-result")).to_contain_text("Done: indexed", timeout=15_000)
    shots.take(sam, "phone-index")
    expect(sam.locator("#audit-table")).to_contain_text("sam")
    overflow = sam.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    shots.take(sam, "phone-audit")
