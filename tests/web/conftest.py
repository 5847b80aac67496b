"""The web page in Debian's Chromium, driven by Playwright (``make browser`` installs both;
nothing is downloaded at run time), against the demo server on loopback: two companies'
documents, an ``/uploads`` folder every user may write, and the demo login.

``page_as(user)`` opens a signed-in page; ``Shots`` keeps each step's screenshot (and, with
``BASTION_DOC_IMAGES=1``, the ones the documentation shows, under ``docs/images/``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from bastion.server.demo import demo_app
from server.support import running

from .people import DESKTOP, Shots, launched


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launched()


def sign_in(page: Page, site: str, user: str) -> None:
    """Sign in as a demo user with the keyboard, and wait for the app."""
    page.goto(site)
    expect(page.locator("#demo-form")).to_be_visible()
    page.locator("#demo-user").select_option(user)
    page.locator("#demo-user").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#whoami")).to_contain_text(f"Signed in as {user}")


class Requests:
    """Every URL the page asked for, and every script dialog (alert) it opened."""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        self.alerts: list[str] = []
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("dialog", lambda d: (self.alerts.append(d.message), d.dismiss()))

    def foreign(self, site: str) -> list[str]:
        return [
            u for u in self.urls if not (u.startswith(site + "/") or u.startswith("blob:" + site))
        ]


@pytest.fixture
def page_as(browser: Browser, site: str) -> Iterator[Callable[..., Page]]:
    opened: list[Page] = []

    def make(user: str, viewport: dict[str, int] | None = None) -> Page:
        context = browser.new_context(viewport=viewport or DESKTOP, accept_downloads=True)
        page = context.new_page()
        page.requests = Requests(page)  # type: ignore[attr-defined]
        opened.append(page)
        sign_in(page, site, user)
        return page

    yield make
    for page in opened:
        foreign = page.requests.foreign(site)  # type: ignore[attr-defined]
        assert not foreign, f"requests left the origin: {foreign}"
        assert not page.requests.alerts, page.requests.alerts  # type: ignore[attr-defined]
        page.context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    return Shots(tmp_path)


def open_tab(page: Page, name: str) -> None:
    page.locator(f'#tabs [data-tab="{name}"]').click()
    expect(page.locator(f"#{name}")).to_be_visible()
