"""Administration as an operator uses it, in Chromium: the index's progress, repair and a
rebuild confirmed in a dialog, "why can't X see this?", the audit log with filters, pages and
a CSV export; and what a person who is no operator gets: no tab, and a refusal from the API."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from bastion.server.demo import demo_app
from server.support import running

from .people import (
    PHONE,
    Shots,
    Visit,
    demo_token,
    launched,
    no_overflow,
    open_tab,
    serious_violations,
    sign_in_demo,
    visiting,
)


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    yield from launched()


@pytest.fixture
def visits(chromium_browser: Browser) -> Iterator[Callable[..., Visit]]:
    yield from visiting(chromium_browser)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


def _bearer(site: str, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {demo_token(site, user)}"}


def test_an_operator_repairs_rebuilds_explains_and_reads_the_audit(
    site: str, visits: Callable[..., Visit], tmp_path: Path
) -> None:
    shots = Shots(tmp_path)
    # some history to look at: a refused read by ana, a few records by mei
    ana = _bearer(site, "ana")
    hidden = httpx.get(
        f"{site}/v1/files/read", params={"path": "/larkspur/hr/salary-bands.md"}, headers=ana
    )
    assert hidden.status_code == 404
    mei = _bearer(site, "mei")
    for _ in range(60):  # more than one page of 50
        httpx.get(f"{site}/v1/files", params={"path": "/larkspur"}, headers=mei)
    marked = "/uploads/<img src=x onerror=window.pwned=1>.md"
    wrote = httpx.post(f"{site}/v1/files/write", json={"path": marked, "content": "x"}, headers=mei)
    assert wrote.status_code == 201, wrote.text

    sam = visits(site).page
    sign_in_demo(sam, site, "sam")
    open_tab(sam, "admin")
    expect(sam.locator("#index-status")).to_contain_text("Search modes")
    # repair runs at once; a rebuild asks first, and Cancel leaves the index alone
    sam.locator("#repair").click()
    expect(sam.locator("#index-result")).to_contain_text("Done: indexed", timeout=15_000)
    sam.locator("#rebuild").click()
    dialog = sam.locator("dialog")
    expect(dialog).to_contain_text("Rebuild the index?")
    sam.keyboard.press("Escape")  # the keyboard cancels it too
    expect(dialog).to_have_count(0)
    expect(sam.locator("#rebuild")).to_be_focused()
    sam.locator("#rebuild").click()
    sam.locator("dialog").get_by_role("button", name="Rebuild").click()
    expect(sam.locator("#index-result")).to_contain_text("Done: indexed", timeout=15_000)
    expect(sam.locator("#index-progress")).to_be_visible()
    # the page may still show the repair's "Done" while the rebuild runs: ask until it ends
    deadline = time.monotonic() + 60
    while True:
        rebuilt = httpx.get(f"{site}/v1/index/status", headers=_bearer(site, "sam")).json()
        result = (rebuilt.get("job") or {}).get("result") or {}
        if "indexed" in result or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert rebuilt["job"]["started_by"] == "sam" and result["indexed"] > 0

    # why can't ana read the salary bands?
    sam.locator("#explain-user").fill("ana")
    sam.locator("#explain-path").fill("/larkspur/hr/salary-bands.md")
    sam.locator("#explain-form button").click()
    result = sam.locator("#explain-result")
    expect(result).to_contain_text("Refused: the document's labels")
    expect(result).to_contain_text("confidential")
    expect(result).to_contain_text("do not admit ana")
    shots.take(sam, "admin-explain", doc=True)

    # the audit: filtered to ana's refusals, then every record in pages of 50
    table = sam.locator("#audit-table tbody tr")
    expect(table.first).to_be_visible()
    sam.locator("#audit-principal").fill("ana")
    sam.locator("#audit-outcome").select_option("refused")
    sam.locator("#audit-form").get_by_role("button", name="Apply filters").click()
    expect(table).to_have_count(1)
    expect(table.first).to_contain_text("/larkspur/hr/salary-bands.md")
    expect(table.first).to_contain_text("refused: NotFoundError")  # what ana was told
    shots.take(sam, "admin-audit", doc=True)
    assert serious_violations(sam) == []
    with sam.expect_download() as wait:
        sam.locator("#audit-export").click()
    rows = list(csv.DictReader(io.StringIO(Path(wait.value.path()).read_text())))
    assert [(r["principal"], r["allowed"], r["path"]) for r in rows] == [
        ("ana", "false", "/larkspur/hr/salary-bands.md")
    ]

    # a path written as markup shows as text
    sam.locator("#audit-principal").fill("mei")
    sam.locator("#audit-outcome").select_option("")
    sam.locator("#audit-path").fill("/uploads/<img")
    sam.locator("#audit-form").get_by_role("button", name="Apply filters").click()
    expect(table.first).to_contain_text(marked)
    assert sam.evaluate("window.pwned") is None
    assert sam.locator("#admin img").count() == 0

    sam.locator("#audit-form").evaluate("f => f.reset()")
    sam.locator("#audit-form").get_by_role("button", name="Apply filters").click()
    expect(sam.locator("#audit-summary")).to_contain_text("Page 1")
    expect(table).to_have_count(50)
    first_page = table.all_inner_texts()
    sam.locator("#audit-older").click()
    expect(sam.locator("#audit-summary")).to_contain_text("Page 2")
    assert table.all_inner_texts() != first_page
    sam.locator("#audit-newer").click()
    expect(sam.locator("#audit-summary")).to_contain_text("Page 1")
    expect(table).to_have_count(50)


def test_a_person_who_is_no_operator_gets_no_administration(
    site: str, visits: Callable[..., Visit]
) -> None:
    ana = visits(site, PHONE).page
    sign_in_demo(ana, site, "ana")
    expect(ana.locator('#tabs [data-tab="admin"]')).to_be_hidden()
    ana.evaluate("location.hash = '#/admin'")
    expect(ana.locator("#chat")).to_be_visible()
    expect(ana.locator("#admin")).to_be_hidden()
    assert no_overflow(ana)
    headers = _bearer(site, "ana")
    audit = httpx.get(f"{site}/v1/audit", headers=headers)
    assert audit.status_code == 403 and "operators" in audit.json()["error"]["message"]
    why = httpx.get(
        f"{site}/v1/explain", params={"user": "mei", "path": "/larkspur/hr"}, headers=headers
    )
    assert why.status_code == 403


def test_the_operator_pages_work_on_a_phone(site: str, visits: Callable[..., Visit]) -> None:
    sam = visits(site, PHONE).page
    sign_in_demo(sam, site, "sam")
    open_tab(sam, "admin")
    expect(sam.locator("#audit-table tbody tr").first).to_be_visible()
    assert no_overflow(sam)
    assert serious_violations(sam) == []
