"""The Search tab as people use it, in Chromium: the declared modes, folder and label filters,
marked snippets that stay text, pages of results, the empty state, and two principals who
see different documents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, expect

from server.support import running

from .conftest import open_tab, sign_in
from .people import DESKTOP, Shots


def _search(page: Page, query: str) -> None:
    page.locator("#search-query").fill(query)
    page.locator("#search-query").press("Enter")
    expect(page.locator("#search-summary")).not_to_have_text("Searching…")
    expect(page.locator("#search-summary")).not_to_be_empty()


def _upload(site: str, user: str, files: dict[str, str], folder: str = "/uploads") -> None:
    token = httpx.post(f"{site}/v1/auth/demo", json={"user": user}).json()["token"]
    parts = [("file", (name, text.encode(), "text/markdown")) for name, text in files.items()]
    answer = httpx.post(
        f"{site}/v1/ingest",
        data={"path": folder},
        files=parts,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 201, answer.text


def test_two_principals_search_for_the_same_words(
    page_as: Callable[..., Page], shots: Shots
) -> None:
    mei = page_as("mei")
    open_tab(mei, "search")
    expect(mei.locator("#search-mode option")).to_have_text(["Default", "Keyword (BM25)"])
    _search(mei, "salary band")
    first = mei.locator("#hits li").first
    expect(first.locator("a")).to_contain_text("/larkspur/hr/salary-bands.md")
    expect(first.locator("mark").first).to_have_text("Salary")
    shots.take(mei, "search-results", doc=True)
    first.locator("a").click()
    expect(mei.locator("#viewer-path")).to_have_text("/larkspur/hr/salary-bands.md:9-17")
    expect(mei.locator("#viewer-text")).to_contain_text("128,000")
    mei.go_back()  # the search is in the address: Back returns to it
    expect(mei.locator("#search-query")).to_have_value("salary band")
    expect(mei.locator("#hits li").first).to_contain_text("/larkspur/hr/salary-bands.md")

    ana = page_as("ana")
    open_tab(ana, "search")
    _search(ana, "salary band senior engineer")
    expect(ana.locator("#search-summary")).to_have_text(
        "No results for “salary band senior engineer”."
    )
    expect(ana.locator("#hits li")).to_have_count(0)
    assert "salary-bands" not in ana.content()
    shots.take(ana, "search-empty", doc=True)


def test_pages_filters_and_hostile_snippets(
    page_as: Callable[..., Page], site: str, shots: Shots
) -> None:
    _upload(
        site,
        "raj",
        {
            f"quokka-{n:02d}.md": f"# Quokka {n}\n\nA quokka sighting, number {n}.\n"
            for n in range(13)
        },
    )
    _upload(
        site,
        "raj",
        {
            "tagged.md": "---\ntags: [wildlife]\n---\n# Tagged\n\nThe tagged quokka.\n",
            "hostile.md": "# H\n\n<b>quokka</b> <img src=x onerror=alert(1)> wombat\n",
        },
        folder="/uploads/zoo",
    )
    raj = page_as("raj")
    open_tab(raj, "search")
    _search(raj, "quokka")
    expect(raj.locator("#hits li")).to_have_count(10)
    expect(raj.locator("#search-summary")).to_have_text("Results 1 to 10 for “quokka” (bm25).")
    raj.get_by_role("link", name="Next →").click()
    expect(raj.locator("#hits li")).to_have_count(5)
    expect(raj.locator("#search-summary")).to_have_text("Results 11 to 15 for “quokka” (bm25).")
    expect(raj.get_by_role("link", name="Next →")).to_have_count(0)
    expect(raj.locator("#hits")).to_have_attribute("start", "11")
    raj.get_by_role("link", name="← Previous").click()
    expect(raj.locator("#hits li")).to_have_count(10)

    raj.locator("#search-filters summary").click()
    raj.locator("#search-path").fill("/uploads/zoo")
    _search(raj, "quokka")
    expect(raj.locator("#hits li")).to_have_count(2)
    hostile = raj.locator("#hits li", has_text="hostile.md")
    expect(hostile.locator(".snippet")).to_contain_text(
        "<b>quokka</b> <img src=x onerror=alert(1)>"
    )
    expect(hostile.locator("mark")).to_have_text(["quokka"])
    assert raj.locator("#hits b, #hits img").count() == 0
    shots.take(raj, "search-filters", doc=True)

    raj.locator("#search-tags").fill("wildlife")
    _search(raj, "quokka")
    expect(raj.locator("#hits li")).to_have_count(1)
    expect(raj.locator("#hits li a")).to_contain_text("/uploads/zoo/tagged.md")
    raj.locator("#search-tags").fill("")
    raj.locator("#search-class").fill("restricted")
    _search(raj, "quokka")
    expect(raj.locator("#search-summary")).to_have_text("No results for “quokka”.")


def test_an_index_with_embeddings_offers_its_modes(browser: Browser, tmp_path: Path) -> None:
    from bastion.core.models import Labels, Scope
    from bastion.core.mounts import Mount
    from bastion.demo.corpus import users
    from bastion.knowledge.embedders.hashing import HashingEmbedder
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex
    from bastion.server import ServerSettings, create_app
    from bastion.server.demo import demo_server_policy
    from bastion.stores.local import LocalStore
    from bastion.workspace import Workspace

    (tmp_path / "notes.md").write_text("# Otters\n\nRiver otters hold hands while sleeping.\n")
    mount = Mount.of("/notes", LocalStore(tmp_path), Scope.READ_ONLY, labels=Labels())
    knowledge = Knowledge(MemoryIndex(), embedder=HashingEmbedder())
    ws = Workspace([mount], policy=demo_server_policy(), knowledge=knowledge)
    ws.sync().rebuild_index()
    people = [(u.principal, u.about) for u in users()]
    app = create_app(ws, settings=ServerSettings(demo_login=True), demo_users=people)
    with running(app) as site:
        page = browser.new_page(viewport=DESKTOP)
        sign_in(page, site, "gus")
        open_tab(page, "search")
        modes = page.locator("#search-mode option")
        expect(modes).to_have_text(["Default", "Keyword (BM25)", "Meaning (vector)", "Hybrid"])
        for value, shown in (("vector", "vector"), ("hybrid", "hybrid"), ("", "hybrid")):
            page.locator("#search-mode").select_option(value)
            _search(page, "otters sleeping")
            expect(page.locator("#search-summary")).to_contain_text(f"({shown}).")
            expect(page.locator("#hits li a")).to_contain_text("/notes/notes.md")
            assert f"mode={value}" in page.url or not value
        page.close()
