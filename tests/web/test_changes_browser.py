"""The Changes tab, in Chromium, for two principals who see different files: mei (HR) sees the
changes to an HR-only folder and the shared uploads, omar (finance) only the uploads. A change
to a file the viewer may not read is not listed, and its diff and undo answer exactly as a
change that does not exist. The diff is text; undo and revert ask first; a conflict says the
file changed since and nothing was undone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from bastion.core.models import Labels, Scope
from bastion.core.mounts import Mount
from bastion.demo.corpus import user, users
from bastion.server.app import create_app
from bastion.server.demo import demo_server_policy
from bastion.server.settings import ServerSettings
from bastion.stores.local import LocalStore
from bastion.workspace import Workspace
from bastion.workspace.journal import Journal
from server.support import running

from .conftest import open_tab
from .people import Shots, serious_violations

MISSING = 999_999


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server over an HR-only folder and the shared uploads, with a change journal, and the
    ids of the changes mei made there (thread ``draft``) before anyone looks."""
    root = tmp_path_factory.mktemp("changes")
    for name in ("hr", "uploads"):
        (root / name).mkdir()
    mounts = [
        Mount.of(
            "/hr",
            LocalStore(root / "hr"),
            Scope.READ_WRITE,
            labels=Labels(tenant="larkspur", classification="internal", roles=frozenset({"hr"})),
        ),
        Mount.of(
            "/uploads",
            LocalStore(root / "uploads"),
            Scope.READ_WRITE,
            labels=Labels(classification="internal"),
        ),
    ]
    journal = Journal(root / "journal.db")
    ws = Workspace(mounts, policy=demo_server_policy(), journal=journal)
    mei = ws.with_principal(user("mei").principal).sync().with_thread("draft")
    mei.write("/hr/pay.md", "band A\n")
    mei.write("/hr/pay.md", "band B\n")
    mei.write("/uploads/plan.md", "alpha\nbeta\n")
    mei.write("/uploads/plan.md", 'alpha\n<img src=x onerror="window.pwned=1"><b>gamma</b>\n')
    mei.with_thread("scratch").write("/uploads/scratch.md", "to be reverted\n")
    changes = mei.changes()
    app = create_app(
        ws,
        settings=ServerSettings(demo_login=True),
        demo_users=[(u.principal, u.about) for u in users()],
    )
    with running(app) as url:
        yield {"url": url, "root": root, "ids": [c.id for c in changes]}
    journal.close()


@pytest.fixture(scope="module")
def site(world: dict[str, Any]) -> str:
    return str(world["url"])


def _listed(page: Page) -> list[str]:
    return page.locator("#changes-list > li").evaluate_all("els => els.map(e => e.dataset.change)")


def _answer(
    page: Page, who: str, method: str, path: str, body: dict[str, int] | None = None
) -> Any:
    """What the server answers ``who``, asked from the page (status, code, message)."""
    return page.evaluate(
        """async ([who, method, path, body]) => {
            const token = await (await fetch("/v1/auth/demo", { method: "POST",
                headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ user: who }) })).json();
            const r = await fetch(path, { method, headers: { Authorization: "Bearer " + token.token,
                "Content-Type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
            const data = await r.json();
            return [r.status, data.error ? data.error.code : null,
                    data.error ? data.error.message.replace(/[0-9]+/g, "N") : null];
        }""",
        [who, method, path, body],
    )


def test_each_viewer_sees_only_the_changes_to_files_it_may_read(
    page_as: Callable[..., Page], world: dict[str, Any], shots: Shots
) -> None:
    hr_one, hr_two, up_one, up_two, scratch = world["ids"]
    omar = page_as("omar")
    open_tab(omar, "changes")
    expect(omar.locator("#changes-status")).to_have_text("3 changes.")
    assert _listed(omar) == [str(scratch), str(up_two), str(up_one)]  # newest first
    expect(omar.locator("#changes")).not_to_contain_text("/hr")
    # A hidden change's diff and undo answer as a change that is not there at all.
    for method, path, body in (
        ("GET", "/v1/changes/diff?change={}", None),
        ("POST", "/v1/changes/undo", "change"),
    ):
        answers = [
            _answer(omar, "omar", method, path.format(i), {"change": i} if body else None)
            for i in (hr_two, MISSING)
        ]
        assert answers[0] == answers[1]
        assert answers[0][0] == 404
    assert (world["root"] / "hr" / "pay.md").read_text() == "band B\n"
    assert serious_violations(omar) == []

    mei = page_as("mei")
    open_tab(mei, "changes")
    expect(mei.locator("#changes-status")).to_have_text("5 changes.")
    assert _listed(mei) == [str(i) for i in (scratch, up_two, up_one, hr_two, hr_one)]
    # Narrowed by thread and by principal.
    mei.locator("#changes-thread").fill("scratch")
    mei.locator("#changes-form button[type=submit]").click()
    expect(mei.locator("#changes-status")).to_have_text("1 change.")
    mei.locator("#changes-thread").fill("")
    mei.locator("#changes-principal").fill("omar")
    mei.locator("#changes-form button[type=submit]").click()
    expect(mei.locator("#changes-status")).to_have_text("No changes.")
    mei.locator("#changes-principal").fill("mei")
    mei.locator("#changes-form button[type=submit]").click()
    expect(mei.locator("#changes-status")).to_have_text("5 changes.")


def test_review_a_diff_undo_a_change_and_revert_a_thread(
    page_as: Callable[..., Page], world: dict[str, Any], shots: Shots
) -> None:
    hr_one, _hr_two, _up_one, up_two, _scratch = world["ids"]
    root: Path = world["root"]
    mei = page_as("mei")
    open_tab(mei, "changes")
    item = mei.locator(f'#changes-list > li[data-change="{up_two}"]')
    item.get_by_role("button", name="Show diff").click()
    diff = item.locator("pre.diff")
    expect(diff).to_contain_text("-beta")
    expect(diff).to_contain_text('+<img src=x onerror="window.pwned=1"><b>gamma</b>')
    assert [t.strip() for t in diff.locator(".del").all_inner_texts()] == ["-beta"]
    assert diff.locator("img, b").count() == 0  # the content is text, never markup
    assert mei.evaluate("window.pwned") is None
    assert serious_violations(mei) == []
    mei.evaluate("window.scrollTo(0, 330)")  # the list and the diff, below the filters
    shots.take(mei, "changes", doc=True)

    # A conflict: the first write of pay.md is undone while the file holds the second.
    mei.locator(f'#changes-list > li[data-change="{hr_one}"]').get_by_role(
        "button", name="Undo…"
    ).click()
    dialog = mei.locator("dialog")
    expect(dialog).to_contain_text(f"Undo change #{hr_one}?")
    dialog.get_by_role("button", name="Undo").click()
    expect(mei.locator("#changes-status")).to_contain_text(
        "The file changed since; nothing was undone."
    )
    assert (root / "hr" / "pay.md").read_text() == "band B\n"

    # Cancel changes nothing; Undo puts back what the file held.
    undo = mei.locator(f'#changes-list > li[data-change="{up_two}"]').get_by_role(
        "button", name="Undo…"
    )
    undo.click()
    mei.locator("dialog").get_by_role("button", name="Cancel").click()
    assert "gamma" in (root / "uploads" / "plan.md").read_text()
    undo.click()
    mei.locator("dialog").get_by_role("button", name="Undo").click()
    expect(mei.locator("#changes-status")).to_have_text(
        f"Undid change #{up_two}: restored /uploads/plan.md."
    )
    assert (root / "uploads" / "plan.md").read_text() == "alpha\nbeta\n"

    # Revert a thread: the button appears once a thread is chosen.
    expect(mei.locator("#changes-revert")).to_be_hidden()
    mei.locator("#changes-thread").fill("scratch")
    mei.locator("#changes-form button[type=submit]").click()
    mei.get_by_role("button", name="Revert thread…").click()
    expect(mei.locator("dialog")).to_contain_text("Revert thread scratch?")
    mei.locator("dialog").get_by_role("button", name="Revert thread").click()
    expect(mei.locator("#changes-status")).to_contain_text("Reverted thread scratch (1 changes)")
    assert not (root / "uploads" / "scratch.md").exists()


def test_a_workspace_without_a_journal_says_so(browser: Any, tmp_path: Path) -> None:
    from bastion.server.demo import demo_app

    from .conftest import sign_in

    with running(demo_app(tmp_path)) as url:  # the demo server keeps no journal
        page = browser.new_page()
        try:
            sign_in(page, url, "mei")
            open_tab(page, "changes")
            expect(page.locator("#changes-status")).to_have_text(
                "This workspace keeps no change journal."
            )
            expect(page.locator("#changes-list > li")).to_have_count(0)
        finally:
            page.close()
