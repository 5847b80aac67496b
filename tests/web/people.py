"""What the sign-in, chat and administration tests share: Debian's Chromium driven by
Playwright (nothing downloaded at run time), the demo server on loopback, a page per person that
records every request (none may leave the origin), axe-core's serious and critical violations,
and screenshots checked as they are taken (copied to ``docs/images/`` with
``BASTION_DOC_IMAGES=1``: the pictures of docs/web.md)."""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect, sync_playwright

DESKTOP = {"width": 1100, "height": 760}
PHONE = {"width": 390, "height": 780}
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SERIOUS = ("serious", "critical")

# An expectation waits until it holds, so a longer limit costs a passing test nothing; Playwright's
# 5 s ran out on a 2-core machine under load while a sign-out was still being answered.
expect.set_options(timeout=20_000)


def chromium() -> str:
    """Debian's Chromium: the real binary behind /usr/bin/chromium, or $BASTION_CHROMIUM."""
    for candidate in (
        os.environ.get("BASTION_CHROMIUM"),
        "/usr/lib/chromium/chromium",
        shutil.which("chromium"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no Chromium found: run `make browser` (apt-get install chromium) first")


def launched() -> Iterator[Browser]:
    """Chromium for a module of tests (a fixture there: ``yield from launched()``)."""
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield launched
        launched.close()


class Visit:
    """One person's page: every URL it asked for, and the script dialogs it opened."""

    def __init__(self, page: Page, site: str) -> None:
        self.page = page
        self.site = site
        self.urls: list[str] = []
        self.alerts: list[str] = []
        # requests of this site's pages (an identity provider's own page is not this site's)
        page.on("request", lambda r: self.urls.append(r.url) if self._here() else None)
        page.on("dialog", lambda d: (self.alerts.append(d.message), d.dismiss()))

    def _here(self) -> bool:
        return self.page.url.startswith((self.site, "about:blank"))

    def foreign(self, *allowed: str) -> list[str]:
        own = (self.site + "/", "blob:" + self.site, *allowed)
        return [u for u in self.urls if not u.startswith(own)]


def visiting(chromium_browser: Browser) -> Iterator[Callable[..., Visit]]:
    """``visit(site, viewport=...)``: a fresh browser context; afterwards, no request left the
    origin and no alert was opened (a fixture: ``yield from visiting(browser)``)."""
    opened: list[Visit] = []

    def make(site: str, viewport: dict[str, int] | None = None, *allowed: str) -> Visit:
        context = chromium_browser.new_context(viewport=viewport or DESKTOP, accept_downloads=True)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
        visit = Visit(context.new_page(), site)
        visit.allowed = allowed  # type: ignore[attr-defined]
        opened.append(visit)
        return visit

    yield make
    for visit in opened:
        foreign = visit.foreign(*visit.allowed)  # type: ignore[attr-defined]
        assert not foreign, f"requests left the origin: {foreign}"
        assert not visit.alerts, visit.alerts
        visit.page.context.close()


def sign_in_demo(page: Page, site: str, user: str) -> None:
    """Sign in as a demo user with the keyboard and wait for the app."""
    page.goto(site)
    expect(page.locator("#demo-form")).to_be_visible()
    page.locator("#demo-user").select_option(user)
    page.locator("#demo-user").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#whoami")).to_contain_text(f"Signed in as {user}")


def open_tab(page: Page, name: str) -> None:
    page.locator(f'#tabs [data-tab="{name}"]').click()
    expect(page.locator(f"#{name}")).to_be_visible()


def demo_token(site: str, user: str) -> str:
    return str(httpx.post(f"{site}/v1/auth/demo", json={"user": user}).json()["token"])


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    results = Axe().run(page)
    found: list[dict[str, Any]] = results.response["violations"]
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
        for v in found
        if v["impact"] in SERIOUS
    ]


def no_overflow(page: Page) -> bool:
    """True when nothing is wider than the viewport (no sideways scrolling)."""
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return bool(overflow <= 0)


class Shots:
    """Screenshots of each step, checked as they are taken: a PNG of the viewport's size."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: list[Path] = []

    def take(self, page: Page, name: str, *, doc: bool = False) -> Path:
        path = self.folder / f"{len(self.taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path))
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        width, height = struct.unpack(">II", data[16:24])
        size = page.viewport_size
        assert size is not None
        assert (width, height) == (size["width"], size["height"]), name
        assert len(data) > 5_000, f"{name}: the screenshot looks blank"
        if doc and os.environ.get("BASTION_DOC_IMAGES") == "1":
            DOC_IMAGES.mkdir(exist_ok=True)
            shutil.copyfile(path, DOC_IMAGES / f"web-{name}.png")
        self.taken.append(path)
        return path
