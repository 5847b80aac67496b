"""The Changes tab's Overlays section, in Chromium, over a real server and an overlay mount on
local folders. An agent (tenant larkspur, thread ``job-1``) has changed the project through the
overlay; mei (HR, confidential) reviews the layer: the list, a diff set as text, one file
applied (the base folder on disk changes), another discarded (the base unchanged, the change
gone), a conflict kept. ana (internal) is not cleared for one file of the layer: it is not in
her list, which is exactly what the API answers her."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from bastion import Principal
from bastion.core.models import Labels, Scope
from bastion.core.mounts import Mount
from bastion.demo.corpus import users
from bastion.server.app import create_app
from bastion.server.demo import demo_server_policy
from bastion.server.settings import ServerSettings
from bastion.stores.local import LocalStore
from bastion.stores.overlay_layers import overlaid
from bastion.workspace import Workspace
from bastion.workspace.journal import Journal
from server.support import running

from .conftest import open_tab
from .people import PHONE, Shots, no_overflow, serious_violations

AGENT = Principal(
    id="agent-7", tenant="larkspur", roles=frozenset({"engineer"}), clearance="confidential"
)
APP = 'print("hi")\n# <img src=x onerror="window.pwned=1"><b>bold</b>\n'
PAY = "---\nclassification: confidential\n---\nband C for everyone\n"
HOSTILE = "/code/<img src=x onerror=window.pwned=2>.md"
ALL = ["/code/app.py", "/code/build", "/code/notes.md", "/code/old.md", "/code/pay.md", HOSTILE]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A server over ``/code``, an overlay on ``project/`` whose layers are kept in
    ``layers/``, after the agent's thread ``job-1`` changed it; ``readme.md`` was then edited
    on disk, so the agent's change there is a conflict."""
    base = tmp_path / "project"
    base.mkdir()
    (tmp_path / "notes").mkdir()
    (base / "app.py").write_text("print('base')\n")
    (base / "old.md").write_text("old notes\n")
    (base / "readme.md").write_text("readme\n")
    plain = Mount.of(
        "/code",
        LocalStore(base),
        Scope.READ_WRITE,
        labels=Labels(tenant="larkspur", classification="internal"),
        description="the project, through an overlay",
    )
    journal = Journal(tmp_path / "journal.db")
    notes = Mount.of(
        "/notes",
        LocalStore(tmp_path / "notes"),
        Scope.READ_WRITE,
        labels=Labels(tenant="larkspur", classification="internal"),
    )
    ws = Workspace(
        [overlaid(plain, "file:layers", relative_to=tmp_path), notes],
        policy=demo_server_policy(),
        journal=journal,
    )
    agent = ws.with_principal(AGENT).sync().with_thread("job-1")
    agent.write("/code/app.py", APP)
    agent.write("/code/notes.md", "scratch notes\n")
    agent.delete("/code/old.md")
    agent.mkdir("/code/build")
    agent.write("/code/pay.md", PAY)
    agent.write(HOSTILE, "a name made of markup\n")
    agent.write("/notes/job-1.md", "what the agent did\n")
    agent.write("/code/readme.md", "readme, by the agent\n")
    (base / "readme.md").write_text("readme, edited by a person meanwhile\n")
    app = create_app(
        ws,
        settings=ServerSettings(demo_login=True),
        demo_users=[(u.principal, u.about) for u in users()],
    )
    with running(app) as url:
        yield {"url": url, "base": base}
    journal.close()


@pytest.fixture
def site(world: dict[str, Any]) -> str:
    return str(world["url"])


def _listed(page: Page) -> list[str]:
    return page.locator("#overlay-list > li").evaluate_all("els => els.map(e => e.dataset.path)")


def _api_paths(page: Page, who: str, thread: str) -> list[str]:
    """The paths /v1/overlay/changes answers ``who`` for ``thread``, asked from the page."""
    return page.evaluate(
        """async ([who, thread]) => {
            const token = await (await fetch("/v1/auth/demo", { method: "POST",
                headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ user: who }) })).json();
            const q = new URLSearchParams({ prefix: "/code", thread });
            const r = await fetch("/v1/overlay/changes?" + q,
                { headers: { Authorization: "Bearer " + token.token } });
            return (await r.json()).changes.map((c) => c.path);
        }""",
        [who, thread],
    )


def _show_layer(page: Page, thread: str) -> None:
    open_tab(page, "changes")
    expect(page.locator("#overlay-block")).to_be_visible()
    expect(page.locator("#overlay-mount")).to_have_value("/code")
    page.locator("#overlay-thread").fill(thread)
    page.locator("#overlay-thread").press("Enter")  # the keyboard submits the form


def _row(page: Page, path: str) -> Any:
    return page.locator(f'#overlay-list > li[data-path="{path}"]')


def test_a_person_reviews_applies_and_discards_an_agents_layer(
    page_as: Callable[..., Page], world: dict[str, Any], shots: Shots
) -> None:
    base: Path = world["base"]
    mei = page_as("mei")
    _show_layer(mei, "job-1")
    expect(mei.locator("#overlay-status")).to_have_text(
        "7 changes in the layer of /code (thread job-1)."
    )
    assert _listed(mei) == _api_paths(mei, "mei", "job-1")
    assert sorted(_listed(mei)) == sorted([*ALL, "/code/readme.md"])
    for path, kind in (
        ("/code/app.py", "modified"),
        ("/code/notes.md", "added"),
        ("/code/old.md", "deleted"),
        ("/code/build", "mkdir"),
    ):
        expect(_row(mei, path).locator(".overlay-kind")).to_have_text(f" {kind}")
        expect(_row(mei, path).locator(".conflict")).to_have_count(0)
    expect(_row(mei, "/code/readme.md").locator(".conflict")).to_contain_text(
        "changed in the base since"
    )
    # The thread is offered from the journal's list (its write to /notes, a plain mount; the
    # journal shows a layer's changes only to a view of that thread).
    expect(mei.locator('#changes-threads option[value="job-1"]')).to_have_count(1)
    # Another thread's layer (or none) has nothing.
    _show_layer(mei, "")
    expect(mei.locator("#overlay-status")).to_have_text(
        "No changes in the layer of /code (outside any thread)."
    )
    expect(mei.locator("#overlay-changes")).to_be_hidden()
    _show_layer(mei, "job-1")
    expect(mei.locator("#overlay-list > li")).to_have_count(7)

    # The diff, as text.
    app = _row(mei, "/code/app.py")
    app.get_by_role("button", name="Show diff of /code/app.py").click()
    diff = app.locator("pre.diff")
    expect(diff).to_contain_text("-print('base')")
    expect(diff).to_contain_text('+# <img src=x onerror="window.pwned=1"><b>bold</b>')
    assert mei.locator("#overlay-block").locator("img, b").count() == 0
    expect(mei.get_by_role("checkbox", name=HOSTILE, exact=True)).to_be_visible()
    assert mei.evaluate("window.pwned") is None  # names and content are text, never markup
    expect(app.get_by_role("button", name="Hide diff of /code/app.py")).to_have_attribute(
        "aria-expanded", "true"
    )
    assert serious_violations(mei) == []
    mei.evaluate("document.getElementById('overlay-title').scrollIntoView()")
    shots.take(mei, "overlays", doc=True)

    # Apply one file: Cancel first changes nothing, then Apply writes the base.
    expect(mei.get_by_role("button", name="Apply selected…")).to_be_disabled()
    mei.get_by_role("checkbox", name="/code/app.py", exact=True).check()
    mei.get_by_role("button", name="Apply selected…").click()
    dialog = mei.locator("dialog")
    expect(dialog).to_contain_text("Apply 1 change?")
    expect(dialog).to_contain_text("Write /code/app.py into the base of /code.")
    dialog.get_by_role("button", name="Cancel").click()
    assert (base / "app.py").read_text() == "print('base')\n"
    mei.get_by_role("button", name="Apply selected…").click()
    mei.locator("dialog").get_by_role("button", name="Apply").click()
    expect(mei.locator("#overlay-result")).to_have_text("Applied /code/app.py.")
    assert (base / "app.py").read_text() == APP
    expect(mei.locator("#overlay-list > li")).to_have_count(6)
    assert "/code/app.py" not in _listed(mei)

    # Discard another: the base is unchanged, the change is gone from the layer.
    mei.get_by_role("checkbox", name="/code/notes.md", exact=True).check()
    mei.get_by_role("button", name="Discard selected…").click()
    expect(mei.locator("dialog")).to_contain_text("Discard 1 change?")
    mei.locator("dialog").get_by_role("button", name="Discard").click()
    expect(mei.locator("#overlay-result")).to_have_text("Dropped /code/notes.md.")
    assert not (base / "notes.md").exists()
    expect(mei.locator("#overlay-list > li")).to_have_count(5)
    assert "/code/notes.md" not in _api_paths(mei, "mei", "job-1")

    # Apply all: the conflict stays in the layer, the base keeps the person's edit.
    mei.get_by_role("button", name="Apply all…").click()
    expect(mei.locator("dialog")).to_contain_text("Apply all?")
    mei.locator("dialog").get_by_role("button", name="Apply").click()
    expect(mei.locator("#overlay-result")).to_contain_text(
        "Kept in the layer as conflicts (changed in the base since): /code/readme.md."
    )
    assert (base / "readme.md").read_text() == "readme, edited by a person meanwhile\n"
    assert not (base / "old.md").exists()
    assert (base / "build").is_dir()
    assert (base / "pay.md").read_text() == PAY
    expect(mei.locator("#overlay-list > li")).to_have_count(1)  # the list shown again
    assert _listed(mei) == ["/code/readme.md"]


def test_a_file_the_viewer_may_not_read_is_not_listed(
    page_as: Callable[..., Page], world: dict[str, Any]
) -> None:
    for viewport in (None, PHONE):
        ana = page_as("ana", viewport)
        _show_layer(ana, "job-1")
        expect(ana.locator("#overlay-status")).to_have_text(
            "6 changes in the layer of /code (thread job-1)."
        )
        assert _listed(ana) == _api_paths(ana, "ana", "job-1")
        assert "/code/pay.md" not in _listed(ana)
        expect(ana.locator("#overlay-block")).not_to_contain_text("pay.md")
        _row(ana, "/code/app.py").get_by_role("button", name="Show diff of /code/app.py").click()
        expect(_row(ana, "/code/app.py").locator("pre.diff")).to_contain_text("+print")
        # By keyboard: Space ticks a file, and the selection's buttons come on.
        ana.get_by_role("checkbox", name="/code/notes.md", exact=True).focus()
        ana.keyboard.press("Space")
        expect(ana.get_by_role("checkbox", name="/code/notes.md", exact=True)).to_be_checked()
        expect(ana.get_by_role("button", name="Discard selected…")).to_be_enabled()
        ana.get_by_role("button", name="Discard selected…").focus()
        ana.keyboard.press("Enter")
        expect(ana.locator("dialog")).to_contain_text("Discard 1 change?")
        assert serious_violations(ana) == []
        ana.keyboard.press("Escape")  # Esc cancels: nothing is dropped
        expect(ana.locator("dialog")).to_have_count(0)
        expect(ana.locator("#overlay-list > li")).to_have_count(6)
        assert serious_violations(ana) == []
        assert no_overflow(ana)


def test_errors_are_said_in_words(page_as: Callable[..., Page], world: dict[str, Any]) -> None:
    mei = page_as("mei")
    _show_layer(mei, "job-1")
    expect(mei.locator("#overlay-list > li")).to_have_count(7)
    # The agent's layer is discarded behind the page's back: the diff and the apply say so.
    dropped = mei.evaluate(
        """async () => {
            const token = await (await fetch("/v1/auth/demo", { method: "POST",
                headers: { "Content-Type": "application/json" },
                body: JSON.stringify({ user: "mei" }) })).json();
            const r = await fetch("/v1/overlay/discard", { method: "POST",
                headers: { Authorization: "Bearer " + token.token,
                           "Content-Type": "application/json" },
                body: JSON.stringify({ prefix: "/code", thread: "job-1",
                                       paths: ["/code/notes.md"] }) });
            return r.status;
        }"""
    )
    assert dropped == 200
    mei.get_by_role("checkbox", name="/code/notes.md", exact=True).check()
    mei.get_by_role("button", name="Apply selected…").click()
    mei.locator("dialog").get_by_role("button", name="Apply").click()
    expect(mei.locator("#overlay-result")).to_have_text(
        "Nothing was applied: that change is not there (any more)."
    )
    assert not (world["base"] / "notes.md").exists()
