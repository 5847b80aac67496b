"""The first hour on the light core: the workspace `bastion init` writes is usable at once by
the person who ran it (its ``default_user``), every CLI write is searchable when it returns
(``--no-index`` for bulk copies), and the index is the core's own (SQLite, no extra)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Run


def test_the_starter_acts_as_its_default_user_said_in_one_line(starter: Path, run: Run) -> None:
    done = run("put", "/scratch/x.md", input="hello\n")
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if "acting as" in line]
    assert said == [
        "acting as alice (default_user of the workspace file); --as USER acts as another"
    ]
    listed = run("ls", "/")
    assert listed.exit_code == 0 and listed.stdout.split() == ["docs/", "scratch/"]
    assert run("ls", "/", "-q").stderr == ""  # -q: no note
    assert run("ls", "/", "--as", "guest").stderr == ""  # named: nothing to say


def test_a_workspace_without_a_default_says_how_to_name_one(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    config.write_text(config.read_text().replace('default_user = "alice"\n', ""))
    done = run("ls", "/")
    assert 'default_user = "alice"' in done.stderr and "--as USER" in done.stderr


def test_a_default_user_not_in_users_is_refused_naming_the_users(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    config.write_text(config.read_text().replace('default_user = "alice"', 'default_user = "zed"'))
    done = run("ls", "/", "--json")
    assert done.exit_code == 1
    error = json.loads(done.stderr)
    assert error["error"] == "configuration"
    assert "default_user" in error["message"] and "alice, bob, guest" in error["message"]


def test_put_mv_rm_keep_the_index_in_step(starter: Path, run: Run) -> None:
    assert run("put", "/scratch/quokka.md", input="The quokka is a marsupial.\n").exit_code == 0
    assert run("search", "quokka", "--json").stdout.count("/scratch/quokka.md") == 1
    assert run("mv", "/scratch/quokka.md", "/scratch/q.md").exit_code == 0
    paths = [h["path"] for h in json.loads(run("search", "quokka", "--json").stdout)["hits"]]
    assert paths == ["/scratch/q.md"]
    assert run("cp", "/scratch/q.md", "/scratch/copy.md").exit_code == 0
    paths = [h["path"] for h in json.loads(run("search", "quokka", "--json").stdout)["hits"]]
    assert sorted(paths) == ["/scratch/copy.md", "/scratch/q.md"]
    assert run("rm", "/scratch/q.md").exit_code == 0
    assert run("rm", "/scratch/copy.md").exit_code == 0
    assert json.loads(run("search", "quokka", "--json").stdout)["hits"] == []


def test_no_index_leaves_the_index_to_one_index_run(starter: Path, run: Run) -> None:
    for n in range(3):
        done = run("put", "--no-index", f"/scratch/w{n}.md", input=f"wombat {n}\n")
        assert done.exit_code == 0
    assert json.loads(run("search", "wombat", "--json").stdout)["hits"] == []
    assert run("index", "-q").exit_code == 0
    assert len(json.loads(run("search", "wombat", "--json").stdout)["hits"]) == 3


def test_the_starters_index_is_the_cores_sqlite_file(starter: Path, run: Run) -> None:
    assert run("index", "-q").exit_code == 0
    assert (starter / ".bastion" / "index" / "index.sqlite").is_file()
    assert not (starter / ".bastion" / "index" / "tables").exists()


_BROKEN = """
[[mounts]]
prefix = "/gone"
url = "file:no-such-folder"

[[mounts]]
prefix = "/bad"
url = "memory://"
scope = "sideways"
"""


def test_config_check_opens_every_store_and_reports_every_problem(starter: Path, run: Run) -> None:
    config = starter / "bastion.toml"
    text = config.read_text().replace('default_user = "alice"', 'default_user = "nobody"')
    config.write_text(text + _BROKEN)
    done = run("config", "check")
    assert done.exit_code == 1
    lines = done.stderr.splitlines()
    assert lines[-1].startswith("Error: bastion.toml: 3 problems: ")
    assert any(ln.startswith("mount /gone: ") and "no-such-folder" in ln for ln in lines)
    assert any(ln.startswith("mount /bad: unknown scope") for ln in lines)
    assert any(ln.startswith("default_user: ") and "nobody" in ln for ln in lines)
    as_json = json.loads(run("config", "check", "--json").stdout)
    assert as_json["valid"] is False and len(as_json["problems"]) == 3


def test_a_mount_that_cannot_open_answers_its_own_error_and_the_others_work(
    starter: Path, run: Run
) -> None:
    config = starter / "bastion.toml"
    config.write_text(
        config.read_text() + _BROKEN.split('[[mounts]]\nprefix = "/bad"', maxsplit=1)[0]
    )
    assert run("put", "/scratch/a.md", input="still here\n").exit_code == 0
    assert run("cat", "/scratch/a.md").stdout == "still here\n"
    listed = run("ls", "/")
    assert listed.exit_code == 0 and "scratch/" in listed.stdout.split()
    gone = run("ls", "/gone", "--json")
    error = json.loads(gone.stderr.splitlines()[-1])
    assert gone.exit_code == 1 and error["error"] == "store_failed", gone.stderr
    assert "/gone" in error["message"]


_FIXTURES = Path(__file__).resolve().parents[1] / "knowledge" / "fixtures" / "ingest"


def _docx(text: str) -> bytes:
    import io

    import docx

    document = docx.Document()
    document.add_heading("Payment terms", level=1)
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_cat_of_a_pdf_or_a_word_document_prints_its_text(starter: Path, run: Run) -> None:
    (starter / "docs" / "report.pdf").write_bytes((_FIXTURES / "report.pdf").read_bytes())
    (starter / "docs" / "terms.docx").write_bytes(_docx("Invoices are paid within 30 days."))
    pdf = run("cat", "/docs/report.pdf")
    assert pdf.exit_code == 0, pdf.output
    assert pdf.stdout.startswith("Quarterly Security Review\n") and "%PDF" not in pdf.stdout
    assert "cat --bytes" in pdf.stderr
    word = run("cat", "/docs/terms.docx")
    assert word.stdout == "# Payment terms\n\nInvoices are paid within 30 days.\n"
    assert run("cat", "/docs/report.pdf", "--lines", "1").stdout == "Quarterly Security Review\n"
    raw = run("cat", "/docs/report.pdf", "--bytes", ":")
    assert raw.stdout_bytes.startswith(b"%PDF")


def test_the_starter_keeps_a_change_journal_so_a_write_can_be_undone(
    starter: Path, run: Run
) -> None:
    assert run("put", "/scratch/plan.md", input="draft\n").exit_code == 0
    assert run("put", "/scratch/plan.md", input="final\n").exit_code == 0
    listed = run("changes", "--json")
    assert listed.exit_code == 0, listed.output
    last = json.loads(listed.stdout)["changes"][-1]
    diff = run("diff", str(last["id"]))
    assert "-draft" in diff.stdout and "+final" in diff.stdout
    assert run("undo", str(last["id"])).exit_code == 0
    assert (starter / "scratch" / "plan.md").read_text() == "draft\n"
    # the guest may not read /scratch (internal): it sees none of it
    assert json.loads(run("changes", "--json", "--as", "guest").stdout)["changes"] == []
