"""The Files tab as people use it, in Chromium: the tree and breadcrumbs, previews, upload by
drag and drop and by the file picker, new file and folder, edit with a version check, rename,
download, delete with confirmation; for two principals who see different documents."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, expect

from server.support import running

from .conftest import open_tab, sign_in
from .people import DESKTOP, Shots

FIXTURES = Path(__file__).resolve().parents[1] / "knowledge" / "fixtures" / "ingest"


def _tree_items(page: Page) -> list[str]:
    return [t.strip() for t in page.locator("#tree [role=treeitem] > .label").all_inner_texts()]


def _drop(page: Page, name: str, text: str) -> None:
    """Drop a file on the folder pane, as a file dragged from the desktop arrives."""
    page.evaluate(
        """([name, text]) => {
            const data = new DataTransfer();
            data.items.add(new File([text], name, { type: "text/markdown" }));
            const pane = document.getElementById("pane");
            for (const type of ["dragenter", "dragover", "drop"]) {
                pane.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
            }
        }""",
        [name, text],
    )


def _token(site: str, user: str) -> str:
    return str(httpx.post(f"{site}/v1/auth/demo", json={"user": user}).json()["token"])


def test_a_reader_of_hr_and_one_who_is_not_see_different_trees(
    page_as: Callable[..., Page], site: str, shots: Shots
) -> None:
    mei = page_as("mei")
    open_tab(mei, "files")
    # The tree with the keyboard: into larkspur, down to hr, open it, down to the document.
    top = mei.locator("#tree > [role=treeitem]").first
    expect(top).to_have_attribute("data-path", "/larkspur")
    top.focus()
    mei.keyboard.press("ArrowRight")
    expect(top).to_have_attribute("aria-expanded", "true")
    expect(mei.locator('[data-path="/larkspur/hr"]')).to_be_visible()
    hr = mei.locator('[role=treeitem][data-path="/larkspur/hr"]')
    for _ in range(3):  # larkspur, then handbook, then hr
        if hr.evaluate("e => e === document.activeElement"):
            break
        mei.keyboard.press("ArrowDown")
    expect(hr).to_be_focused()
    mei.keyboard.press("ArrowRight")
    expect(hr).to_have_attribute("aria-expanded", "true")
    expect(mei.locator('[data-path="/larkspur/hr/salary-bands.md"]')).to_be_visible()
    mei.keyboard.press("ArrowDown")
    mei.keyboard.press("Enter")
    expect(mei.locator("#viewer-path")).to_have_text("/larkspur/hr/salary-bands.md")
    expect(mei.locator("#viewer-text h3")).to_have_text("Salary bands 2026")
    expect(mei.locator("#labels")).to_contain_text("confidential")
    expect(mei.locator("#labels")).to_contain_text("hr")
    crumbs = mei.locator("#crumbs a")
    expect(crumbs).to_have_text(["All files", "larkspur", "hr", "salary-bands.md"])
    shots.take(mei, "files-preview", doc=True)
    mei.keyboard.press("ArrowLeft")  # back to the folder, then close it
    mei.keyboard.press("ArrowLeft")
    expect(hr).to_have_attribute("aria-expanded", "false")
    crumbs.nth(2).click()
    expect(mei.locator("#viewer-path")).to_have_text("/larkspur/hr")
    expect(mei.locator(".listing")).to_contain_text("salary-bands.md")

    ana = page_as("ana")
    open_tab(ana, "files")
    ana.locator('[data-path="/larkspur"] > .label').click()
    expect(ana.locator('[data-path="/larkspur/handbook"]')).to_be_visible()
    items = _tree_items(ana)
    assert "hr/" not in items and "salary-bands.md" not in items, items
    # A direct address to a hidden document answers as one to a document that does not exist.
    shown = {}
    for path in ("/larkspur/hr", "/larkspur/hr/salary-bands.md", "/larkspur/hr/no-such-file.md"):
        ana.goto(f"{site}/#/files{path}")
        expect(ana.locator("#viewer-path")).to_have_text("Not found")
        expect(ana.locator("#pane")).to_contain_text(path)
        shown[path] = ana.locator("#pane").inner_text().replace(path, "PATH")
    assert len(set(shown.values())) == 1, shown
    assert "128,000" not in ana.content()
    shots.take(ana, "files-hidden-is-missing", doc=True)


def test_upload_new_edit_conflict_rename_download_delete(
    page_as: Callable[..., Page], site: str, shots: Shots, tmp_path: Path
) -> None:
    ana = page_as("ana")
    ana.goto(f"{site}/#/files/uploads")
    expect(ana.locator(".dropzone")).to_be_visible()
    _drop(
        ana, "heron-notes.md", "# Heron notes\n\nThe marmalade checklist lives in the east wing.\n"
    )
    expect(ana.locator("#upload-status")).to_have_text(
        "Uploaded /uploads/heron-notes.md and indexed."
    )
    assert ana.locator("#pane progress").evaluate("p => p.value") == 1  # progress reached the end
    expect(ana.locator('[data-path="/uploads/heron-notes.md"]')).to_be_visible()
    shots.take(ana, "files-uploaded", doc=True)

    ana.get_by_role("button", name="New folder").click()
    expect(ana.locator("dialog")).to_be_visible()
    ana.keyboard.type("notes")
    ana.keyboard.press("Enter")
    expect(ana.locator("#viewer-path")).to_have_text("/uploads/notes")
    expect(ana.locator("#pane")).to_contain_text("This folder is empty.")

    ana.get_by_role("button", name="New file").click()
    ana.keyboard.type("todo.md")
    ana.keyboard.press("Enter")
    expect(ana.locator("#editor")).to_be_focused()
    ana.locator("#editor").fill("# To do\n\n- buy *marmalade*\n")
    ana.locator("#save").click()
    expect(ana.locator("#viewer-text h3")).to_have_text("To do")
    expect(ana.locator("#viewer-text li em")).to_have_text("marmalade")

    # Someone else writes the file while ana edits it: her save is refused, nothing is lost.
    ana.get_by_role("button", name="Edit").click()
    ana.locator("#editor").fill("# To do\n\n- mine\n")
    headers = {"Authorization": "Bearer " + _token(site, "ana")}
    body = {"path": "/uploads/notes/todo.md", "content": "# To do\n\n- theirs\n"}
    assert httpx.post(f"{site}/v1/files/write", json=body, headers=headers).status_code == 201
    ana.locator("#save").click()
    expect(ana.locator("dialog")).to_contain_text("was changed since you opened it")
    shots.take(ana, "files-conflict", doc=True)
    ana.keyboard.press("Escape")  # keep editing
    expect(ana.locator("dialog")).to_have_count(0)
    expect(ana.locator("#editor")).to_have_value("# To do\n\n- mine\n")
    ana.locator("#save").click()
    ana.locator("dialog").get_by_role("button", name="Reload").click()
    expect(ana.locator("#viewer-text li")).to_have_text("theirs")

    ana.get_by_role("button", name="Rename or move").click()
    ana.locator("#dialog-input").fill("/uploads/notes/done.md")
    ana.keyboard.press("Enter")
    expect(ana.locator("#viewer-path")).to_have_text("/uploads/notes/done.md")
    expect(ana.locator('[data-path="/uploads/notes/todo.md"]')).to_have_count(0)
    expect(ana.locator('[data-path="/uploads/notes/done.md"]')).to_be_visible()

    with ana.expect_download() as download:
        ana.get_by_role("button", name="Download").click()
    assert download.value.suggested_filename == "done.md"
    assert Path(download.value.path()).read_text() == "# To do\n\n- theirs\n"

    ana.get_by_role("button", name="Delete").click()
    expect(ana.locator("dialog")).to_contain_text("Delete /uploads/notes/done.md?")
    ana.keyboard.press("Escape")  # changed her mind: nothing deleted
    expect(ana.locator("#viewer-path")).to_have_text("/uploads/notes/done.md")
    ana.get_by_role("button", name="Delete").click()
    ana.locator("dialog").get_by_role("button", name="Delete").click()
    expect(ana.locator("#viewer-path")).to_have_text("/uploads/notes")
    expect(ana.locator("#pane")).to_contain_text("This folder is empty.")
    ana.get_by_role("button", name="Delete").click()
    ana.locator("dialog").get_by_role("button", name="Delete").click()
    expect(ana.locator("#viewer-path")).to_have_text("/uploads")
    expect(ana.locator('[data-path="/uploads/notes"]')).to_have_count(0)


def test_pdf_and_word_documents_preview_as_their_text(
    page_as: Callable[..., Page], site: str, tmp_path: Path
) -> None:
    import docx

    word = docx.Document()
    word.add_heading("Ferry timetable", level=1)
    word.add_paragraph("The night ferry leaves at 23:40 from pier nine.")
    buffer = io.BytesIO()
    word.save(buffer)
    (tmp_path / "timetable.docx").write_bytes(buffer.getvalue())
    raj = page_as("raj")
    raj.goto(f"{site}/#/files/uploads")
    raj.locator("#upload-file").set_input_files(
        [str(FIXTURES / "report.pdf"), str(tmp_path / "timetable.docx")]
    )
    expect(raj.locator("#upload-status")).to_contain_text("/uploads/timetable.docx")
    raj.goto(f"{site}/#/files/uploads/report.pdf")
    expect(raj.locator("#viewer-text")).to_contain_text("Quarterly Security Review")
    expect(raj.locator("#viewer-text")).to_contain_text("Rotate API keys quarterly")
    expect(raj.get_by_role("button", name="Edit")).to_have_count(0)  # its text is not the file
    raj.goto(f"{site}/#/files/uploads/timetable.docx")
    expect(raj.locator("#viewer-text")).to_contain_text("The night ferry leaves at 23:40")


def test_hostile_names_and_contents_render_as_text(
    page_as: Callable[..., Page], site: str, shots: Shots
) -> None:
    lena = page_as("lena")
    lena.goto(f"{site}/#/files/uploads")
    expect(lena.locator(".dropzone")).to_be_visible()
    name = "<img src=x onerror=alert(1)>.md"
    content = (
        "---\ntags: [x]\n---\n# <script>alert(2)</script>\n\n<img src=x onerror=alert(3)>\n\n"
        "[click me](javascript:alert(4)) and [ok](https://example.org/)\n\n"
        "| a | <b>b</b> |\n|---|---|\n| <i>1</i> | 2 |\n"
    )
    _drop(lena, name, content)
    expect(lena.locator("#upload-status")).to_contain_text("Uploaded /uploads/<img src=x")
    lena.locator(".listing a", has_text=name).click()
    body = lena.locator("#viewer-text")
    expect(body.locator("h3")).to_have_text("<script>alert(2)</script>")
    expect(body).to_contain_text("<img src=x onerror=alert(3)>")
    expect(lena.locator("#viewer-path")).to_have_text("/uploads/" + name)
    assert lena.locator("#files img, #files script, #files b, #files i").count() == 0
    expect(body.locator("a")).to_have_count(1)  # the javascript: link stays text
    expect(body.locator("a")).to_have_attribute("href", "https://example.org/")
    expect(body).to_contain_text("[click me](javascript:alert(4))")
    expect(body.locator("td").first).to_have_text("<i>1</i>")
    expect(body.locator(".front-matter")).to_contain_text("tags: [x]")
    shots.take(lena, "files-hostile", doc=True)


def test_labels_show_and_a_writer_may_tighten_them(
    page_as: Callable[..., Page], site: str, shots: Shots
) -> None:
    tom = page_as("tom")
    tom.goto(f"{site}/#/files/uploads")
    expect(tom.locator(".dropzone")).to_be_visible()
    _drop(tom, "rota.md", "# Rota\n\nNight shifts rotate weekly.\n")
    expect(tom.locator("#upload-status")).to_contain_text("Uploaded /uploads/rota.md")
    tom.goto(f"{site}/#/files/uploads/rota.md")
    expect(tom.locator("#labels")).to_contain_text("internal")
    expect(tom.locator("#labels")).to_contain_text("every role")
    tom.get_by_role("button", name="Labels…").click()
    tom.locator("#label-roles").fill("employee")
    tom.locator("#label-tags").fill("shifts, night")
    shots.take(tom, "files-labels", doc=True)
    tom.locator("dialog").get_by_role("button", name="Save labels").click()
    expect(tom.locator("#labels")).to_contain_text("night, shifts")
    expect(tom.locator("#labels")).to_contain_text("employee")
    expect(tom.locator('[data-path="/uploads/rota.md.labels.yaml"]')).to_be_visible()


def test_names_with_address_characters_open_and_move(
    page_as: Callable[..., Page], site: str
) -> None:
    omar = page_as("omar")
    omar.goto(f"{site}/#/files/uploads")
    expect(omar.locator(".dropzone")).to_be_visible()
    name = "50% off? #1 & more.md"
    _drop(omar, name, "# Deal\n\nHalf price.\n")
    expect(omar.locator("#upload-status")).to_contain_text(name)
    omar.locator(".listing a", has_text=name).click()
    expect(omar.locator("#viewer-path")).to_have_text("/uploads/" + name)
    expect(omar.locator("#viewer-text h3")).to_have_text("Deal")
    expect(omar.locator("#crumbs a").last).to_have_text(name)
    omar.reload()  # a bearer token lives in memory only: signed out, the address kept
    expect(omar.locator("#demo-form")).to_be_visible()
    omar.locator("#demo-user").select_option("omar")
    omar.locator("#demo-form button").click()
    expect(omar.locator("#viewer-path")).to_have_text("/uploads/" + name)
    omar.get_by_role("button", name="Rename or move").click()
    omar.locator("#dialog-input").fill("/uploads/deal #2?.md")
    omar.keyboard.press("Enter")
    expect(omar.locator("#viewer-path")).to_have_text("/uploads/deal #2?.md")
    expect(omar.locator("#viewer-text h3")).to_have_text("Deal")


def test_who_holds_the_label_permission_may_loosen_labels(browser: Browser, tmp_path: Path) -> None:
    from bastion.core.models import Action, Labels, Scope
    from bastion.core.mounts import Mount
    from bastion.core.policy import Policy, Rule
    from bastion.core.principal import RoleGraph
    from bastion.demo.corpus import role_hierarchy, users
    from bastion.server import ServerSettings, create_app
    from bastion.stores.local import LocalStore
    from bastion.workspace import Workspace

    (tmp_path / "review.md").write_text("# Review\n\nThe review is done.\n")
    (tmp_path / "review.md.labels.yaml").write_text("classification: confidential\n")
    (tmp_path / "plan.md").write_text("# Plan\n\nThe plan is ready.\n")
    everyday = [a for a in Action if not a.operator]
    policy = Policy(
        rules=(
            Rule.allow(everyday, "/**"),
            Rule.allow([Action.LABEL], "/**", roles={"security"}),
        ),
        roles=RoleGraph.from_mapping(role_hierarchy()),
    )
    mount = Mount.of(
        "/team", LocalStore(tmp_path), Scope.READ_WRITE, labels=Labels(classification="internal")
    )
    people = [(u.principal, u.about) for u in users()]
    app = create_app(
        Workspace([mount], policy=policy),
        settings=ServerSettings(demo_login=True),
        demo_users=people,
    )
    with running(app) as site:
        raj = browser.new_page(viewport=DESKTOP)
        sign_in(raj, site, "raj")  # internal clearance, no label permission
        raj.goto(f"{site}/#/files/team/review.md")
        expect(raj.locator("#viewer-path")).to_have_text("Not found")
        raj.goto(f"{site}/#/files/team/plan.md")
        expect(raj.locator("#labels")).to_contain_text("internal")
        raj.get_by_role("button", name="Labels…").click()
        raj.locator("#label-class").fill("public")
        raj.locator("dialog").get_by_role("button", name="Save labels").click()
        expect(raj.locator("dialog")).to_have_count(0)
        raj.reload()  # signed out; sign in again and look
        sign_in(raj, site, "raj")
        raj.goto(f"{site}/#/files/team/plan.md")
        expect(raj.locator("#labels dd").first).to_have_text("internal")  # not loosened

        sam = browser.new_page(viewport=DESKTOP)
        sign_in(sam, site, "sam")  # security: may relabel
        sam.goto(f"{site}/#/files/team/review.md")
        expect(sam.locator("#labels dd").first).to_have_text("confidential")
        sam.get_by_role("button", name="Labels…").click()
        sam.locator("#label-class").fill("internal")
        sam.locator("dialog").get_by_role("button", name="Save labels").click()
        expect(sam.locator("#labels dd").first).to_have_text("internal")
        raj.goto(f"{site}/#/files/team/review.md")
        expect(raj.locator("#viewer-text h3")).to_have_text("Review")  # now raj reads it
        raj.close()
        sam.close()


def test_an_upload_over_the_limit_is_refused_and_said_so(browser: Browser, tmp_path: Path) -> None:
    from bastion.server import ServerSettings
    from bastion.server.demo import demo_app

    settings = ServerSettings(demo_login=True, max_upload_bytes=64 * 1024)
    with running(demo_app(tmp_path / "demo", settings=settings)) as site:
        page = browser.new_page(viewport=DESKTOP)
        sign_in(page, site, "ana")
        page.goto(f"{site}/#/files/uploads")
        expect(page.locator(".dropzone")).to_be_visible()
        _drop(page, "big.md", "# Big\n\n" + "word " * 60_000)
        expect(page.locator("#upload-status")).to_contain_text("Upload refused")
        expect(page.locator("#pane progress")).to_be_hidden()
        page.goto(f"{site}/#/files/uploads/big.md")
        expect(page.locator("#viewer-path")).to_have_text("Not found")  # nothing written
        page.close()
