"""The page's shell in Chromium: strict headers and nothing fetched from elsewhere, tabs and
dialogs by keyboard, a phone's width, and axe-core finding no serious accessibility
violation on any view of Files and Search (axe.min.js from the ``axe-playwright-python``
wheel: nothing is downloaded at run time)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from .conftest import open_tab
from .people import DESKTOP, PHONE, Shots

MODULES = ("app", "signin", "chat", "files", "search", "admin", "markdown", "tree", "overlays")


def _serious(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    results = Axe().run(page)
    found = results.response["violations"]
    return [
        {"id": v["id"], "nodes": [n["target"] for n in v["nodes"]]}
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def _overflow(page: Page) -> int:
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


def test_the_page_and_its_modules_are_served_with_strict_headers(site: str) -> None:
    page = httpx.get(site + "/")
    policy = page.headers["content-security-policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "connect-src 'self'"):
        assert directive in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    found = re.search(
        r'<script type="module" src="/static/([0-9a-f]{12})/app.js"></script>', page.text
    )
    assert found, page.text[:600]
    for name in MODULES:
        module = httpx.get(f"{site}/static/{found[1]}/{name}.js")
        assert module.status_code == 200, name
        assert "javascript" in module.headers["content-type"], name
        assert "innerHTML" not in module.text and "insertAdjacentHTML" not in module.text, name
        assert module.headers["x-content-type-options"] == "nosniff", name


def test_static_files_are_cached_by_version_and_compressed(site: str) -> None:
    page = httpx.get(site + "/")
    assert page.headers["cache-control"] == "no-cache"
    version = re.search(r'src="/static/([0-9a-f]{12})/app.js"', page.text)
    assert version
    pinned = httpx.get(f"{site}/static/{version[1]}/app.js")
    assert pinned.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert pinned.headers["content-encoding"] == "gzip"  # httpx asks for gzip and unpacks it
    assert "export" in pinned.text or "import" in pinned.text
    plain = httpx.get(f"{site}/static/app.js", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.headers["cache-control"] == "no-cache" and plain.text == pinned.text
    # a version that is not this server's (a page from before an upgrade): asked again each time
    old = httpx.get(f"{site}/static/000000000000/app.js")
    assert old.status_code == 200 and old.headers["cache-control"] == "no-cache"
    again = httpx.get(f"{site}/static/app.js", headers={"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    # the page itself revalidates too
    page_again = httpx.get(site + "/", headers={"If-None-Match": page.headers["etag"]})
    assert page_again.status_code == 304
    for missing in ("nothere.js", "../app.py", f"{version[1]}/nothere.js", "a/b/app.js"):
        reply = httpx.get(f"{site}/static/{missing}")
        assert reply.status_code == 404, missing
        assert reply.json()["error"]["code"] == "not_found", missing


def test_no_serious_accessibility_violation_on_any_view(
    page_as: Callable[..., Page], site: str
) -> None:
    for user, viewport in (("mei", None), ("ana", PHONE)):
        page = page_as(user, viewport)
        seen: dict[str, list[dict[str, Any]]] = {}
        seen["chat"] = _serious(page)
        open_tab(page, "files")
        expect(page.locator("#tree [role=treeitem]").first).to_be_visible()
        seen["files"] = _serious(page)
        page.goto(f"{site}/#/files/larkspur/handbook")
        expect(page.locator(".listing")).to_be_visible()
        seen["folder"] = _serious(page)
        page.locator(".listing a").first.click()
        expect(page.locator("#labels")).to_be_visible()
        seen["preview"] = _serious(page)
        page.goto(f"{site}/#/files/uploads")
        page.get_by_role("button", name="New folder").click()
        expect(page.locator("dialog")).to_be_visible()
        seen["dialog"] = _serious(page)
        page.keyboard.press("Escape")
        page.goto(f"{site}/#/search?q=travel+expenses")
        expect(page.locator("#hits li").first).to_be_visible()
        page.locator("#search-filters summary").click()
        seen["search"] = _serious(page)
        assert not any(seen.values()), (user, seen)


def test_no_serious_accessibility_violation_signed_out_or_as_an_operator(
    browser: Browser, page_as: Callable[..., Page], site: str
) -> None:
    for viewport in (DESKTOP, PHONE):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.goto(site)
        expect(page.locator("#demo-form")).to_be_visible()
        page.locator("#token-method summary").click()  # every method open
        assert _serious(page) == [], viewport
        assert _overflow(page) <= 0, viewport
        context.close()
    sam = page_as("sam")
    open_tab(sam, "admin")
    expect(sam.locator("#audit-table tbody tr").first).to_be_visible()
    # by keyboard: the user field, its hint, then the path, Enter explains
    sam.locator("#explain-user").focus()
    sam.keyboard.type("ana")
    sam.keyboard.press("Tab")
    expect(sam.locator("#explain-path")).to_be_focused()
    sam.keyboard.type("/larkspur/hr/salary-bands.md")
    sam.keyboard.press("Enter")
    expect(sam.locator("#explain-result .verdict")).to_contain_text("ana")
    assert _serious(sam) == []


def test_tabs_and_dialogs_by_keyboard(page_as: Callable[..., Page], site: str) -> None:
    ana = page_as("ana")
    chat = ana.locator('#tabs [data-tab="chat"]')
    chat.focus()
    ana.keyboard.press("ArrowRight")
    files = ana.locator('#tabs [data-tab="files"]')
    expect(files).to_be_focused()
    expect(files).to_have_attribute("aria-selected", "true")
    expect(ana.locator("#files")).to_be_visible()
    expect(ana.locator("#chat")).to_be_hidden()
    ana.keyboard.press("End")
    expect(ana.locator('#tabs [data-tab="changes"]')).to_be_focused()  # the last offered
    expect(ana.locator("#changes")).to_be_visible()
    ana.keyboard.press("Home")
    expect(chat).to_have_attribute("aria-selected", "true")
    assert ana.locator('#tabs [data-tab="admin"]').is_hidden()  # not an operator
    # A citation's document opened in Files is not left open on the other tabs.
    ana.goto(f"{site}/#/files/larkspur/handbook/travel-and-expenses.md")
    expect(ana.locator("#viewer-path")).to_have_text("/larkspur/handbook/travel-and-expenses.md")
    open_tab(ana, "chat")
    expect(ana.locator("#viewer-path")).to_be_hidden()

    ana.goto(f"{site}/#/files/uploads")
    opener = ana.get_by_role("button", name="New folder")
    opener.click()
    dialog = ana.locator("dialog")
    expect(ana.locator("#dialog-input")).to_be_focused()
    for _ in range(6):  # focus goes round inside the dialog, never to the page behind it
        ana.keyboard.press("Tab")
        inside = dialog.evaluate("(d) => d.contains(document.activeElement)")
        on_page = ana.evaluate("document.activeElement.closest('main') !== null")
        assert inside or not on_page
    ana.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(opener).to_be_focused()


def test_files_and_search_at_a_phone_width(
    page_as: Callable[..., Page], site: str, shots: Shots
) -> None:
    mei = page_as("mei", PHONE)
    mei.goto(f"{site}/#/files/larkspur/hr/salary-bands.md")
    expect(mei.locator("#viewer-text h3")).to_have_text("Salary bands 2026")
    assert _overflow(mei) <= 0
    shots.take(mei, "phone-files", doc=True)
    mei.goto(f"{site}/#/search?q=salary+band")
    expect(mei.locator("#hits li").first).to_be_visible()
    assert _overflow(mei) <= 0
    shots.take(mei, "phone-search", doc=True)


def test_signing_out_forgets_what_was_shown(page_as: Callable[..., Page], site: str) -> None:
    mei = page_as("mei")
    mei.goto(f"{site}/#/files/larkspur/hr/salary-bands.md")
    expect(mei.locator("#viewer-text")).to_contain_text("128,000")
    mei.goto(f"{site}/#/search?q=salary+band")
    expect(mei.locator("#hits li").first).to_contain_text("salary-bands.md")
    mei.get_by_role("button", name="Sign out").click()
    expect(mei.locator("#demo-form")).to_be_visible()
    assert "128,000" not in mei.content() and "salary-bands" not in mei.content()
    assert "#" not in mei.url  # the address no longer names what was open
    mei.locator("#demo-user").select_option("ana")
    mei.locator("#demo-form button").click()
    expect(mei.locator("#whoami")).to_contain_text("Signed in as ana")
    open_tab(mei, "files")
    expect(mei.locator('#tree [data-path="/larkspur"]')).to_be_visible()
    open_tab(mei, "search")
    expect(mei.locator("#search-query")).to_have_value("")
    assert "salary" not in mei.content()
