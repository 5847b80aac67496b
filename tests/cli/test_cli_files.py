"""The file commands show the workspace exactly as the acting principal sees it."""

from __future__ import annotations

import base64
from pathlib import Path

from cli_support import Run, as_json, error_of

HIDDEN = ("salary-bands", "project-heron", "q3-forecast", "incident-2026-02", "hr/", "legal")


def _no_hidden_name(text: str) -> None:
    for name in HIDDEN:
        assert name not in text


def test_ls_shows_only_what_the_user_may_see_and_says_nothing_of_the_rest(
    demo: Path, run: Run
) -> None:
    result = run("ls", "--as", "ana", "/larkspur")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["handbook/", "public/"]
    assert result.stderr == ""
    _no_hidden_name(result.output)
    data = as_json(run("ls", "--as", "ana", "/larkspur", "--json"))
    assert [e["name"] for e in data["entries"]] == ["handbook", "public"]
    assert "hidden" not in data
    _no_hidden_name(str(data))


def test_an_empty_result_says_whose_view_it_is_and_quiet_drops_it(demo: Path, run: Run) -> None:
    result = run("grep", "--as", "ana", "no such words anywhere", "/larkspur")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: no results among what ana@larkspur (clearance internal) may see\n"
    )
    quiet = run("grep", "-q", "--as", "ana", "no such words anywhere", "/larkspur")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_a_hidden_file_is_not_found_exactly_like_a_missing_one(demo: Path, run: Run) -> None:
    hidden = run("cat", "--as", "ana", "/larkspur/hr/salary-bands.md", "--json")
    missing = run("cat", "--as", "ana", "/larkspur/hr/no-such-file.md", "--json")
    assert hidden.exit_code == missing.exit_code == 1
    assert error_of(hidden) == {
        "error": "not_found",
        "message": "/larkspur/hr/salary-bands.md not found",
    }
    assert error_of(missing)["error"] == "not_found"
    assert hidden.stdout == "" and "Bands" not in hidden.output
    other_tenant = run("ls", "--as", "ana", "/tidewater", "--json")
    assert error_of(other_tenant)["error"] == "not_found"
    stat = run("stat", "--as", "ana", "/larkspur/hr/salary-bands.md")
    assert stat.exit_code == 1 and "not found" in stat.stderr


def test_the_right_user_reads_the_file(demo: Path, run: Run) -> None:
    result = run("cat", "--as", "mei", "/larkspur/hr/salary-bands.md")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("---\ntitle: Salary bands 2026\n")


def test_cat_reads_a_line_range_and_a_byte_range(demo: Path, run: Run) -> None:
    path = "/larkspur/handbook/leave-policy.md"
    whole = (demo / "corpus" / "larkspur" / "handbook" / "leave-policy.md").read_bytes()
    lines = whole.decode().splitlines(keepends=True)
    assert run("cat", "--as", "ana", path, "--lines", "2:3").stdout == "".join(lines[1:3])
    assert run("cat", "--as", "ana", path, "--lines", "9").stdout == lines[8]
    assert run("cat", "--as", "ana", path, "--lines", "14:").stdout == "".join(lines[13:])
    assert run("cat", "--as", "ana", path, "--bytes", "4:9").stdout_bytes == whole[4:9]
    data = as_json(run("cat", "--as", "ana", path, "--bytes", "0:3", "--json"))
    assert base64.b64decode(data["base64"]) == whole[:3] and data["text"] == "---"
    data = as_json(run("cat", "--as", "ana", path, "--lines", "2:2", "--json"))
    assert data == {"path": path, "first_line": 2, "text": lines[1]}


def test_bad_ranges_are_usage_errors(demo: Path, run: Run) -> None:
    for args in (
        ("--lines", "5:2"),
        ("--lines", "a:b"),
        ("--bytes", "-1:"),
        ("--lines", "1", "--bytes", "1"),
    ):
        result = run("cat", "--as", "ana", "/larkspur/public/careers.md", *args, "--json")
        assert result.exit_code == 2, (args, result.output)
        assert error_of(result)["error"] == "usage"


def test_tree_glob_and_grep_hide_and_say_nothing_of_it(demo: Path, run: Run) -> None:
    tree = run("tree", "--as", "ana", "/larkspur")
    assert tree.exit_code == 0, tree.output
    assert "leave-policy.md" in tree.stdout
    _no_hidden_name(tree.output)
    assert tree.stderr == ""

    glob = as_json(run("glob", "--as", "ana", "/larkspur/**/*.md", "--json"))
    paths = [e["path"] for e in glob["entries"]]
    assert "/larkspur/public/careers.md" in paths and "hidden" not in glob
    _no_hidden_name(str(paths))

    grep = as_json(run("grep", "--as", "ana", "-i", "salary", "/larkspur", "--json"))
    assert all("salary-bands" not in m["path"] for m in grep["matches"])
    assert "hidden" not in grep
    everyone = as_json(run("grep", "--as", "ana", "-i", "parental leave", "/larkspur", "--json"))
    assert [m["line"] for m in everyone["matches"]] == [14]


def test_put_cat_cp_mv_rm_round_trip(starter: Path, run: Run) -> None:
    put = run("put", "--as", "bob", "/scratch/a.md", input="hello\nworld\n")
    assert put.exit_code == 0, put.output
    assert "wrote 12 bytes to /scratch/a.md" in put.stdout
    assert run("cat", "--as", "bob", "/scratch/a.md").stdout == "hello\nworld\n"
    appended = run("put", "--as", "bob", "/scratch/a.md", "--append", input="more\n")
    assert appended.exit_code == 0
    source = starter / "local.txt"
    source.write_text("from a file\n")
    assert run("put", "--as", "bob", "/scratch/b.txt", str(source)).exit_code == 0
    exists = run("put", "--as", "bob", "/scratch/b.txt", str(source), "--create", "--json")
    assert exists.exit_code == 1 and error_of(exists)["error"] == "already_exists"
    copied = as_json(run("cp", "--as", "bob", "/scratch/a.md", "/scratch/c.md", "--json"))
    assert copied["path"] == "/scratch/c.md" and copied["source"] == "/scratch/a.md"
    assert run("mv", "--as", "bob", "/scratch/c.md", "/scratch/d.md").exit_code == 0
    listed = as_json(run("ls", "--as", "bob", "/scratch", "--json"))
    assert [e["name"] for e in listed["entries"]] == ["a.md", "b.txt", "d.md"]
    assert run("cat", "--as", "bob", "/scratch/d.md").stdout == "hello\nworld\nmore\n"
    assert run("rm", "--as", "bob", "/scratch/d.md").exit_code == 0
    stat = as_json(run("stat", "--as", "bob", "/scratch/a.md", "--json"))
    assert stat["kind"] == "file" and stat["size"] == 17 and stat["version"]


def test_refusals_carry_stable_codes(starter: Path, run: Run) -> None:
    read_only = run("put", "--as", "alice", "/docs/x.md", "--json", input="x")
    assert read_only.exit_code == 1 and error_of(read_only)["error"] == "scope_denied"
    guest = run("put", "--as", "guest", "/scratch/x.md", "--json", input="x")
    assert guest.exit_code == 1
    assert error_of(guest)["error"] in {"policy_denied", "not_found"}
    bad = run("cat", "--as", "bob", "/docs/../../etc/passwd", "--json")
    assert error_of(bad)["error"] == "invalid_path"
    pattern = run("grep", "--as", "bob", "-E", "(", "/docs", "--json")
    assert error_of(pattern)["error"] == "invalid_pattern"


def test_put_refuses_a_stale_version_and_rm_needs_r_for_a_folder(starter: Path, run: Run) -> None:
    first = as_json(run("put", "--as", "bob", "/scratch/d/a.md", "-", "--json", input="one\n"))
    stale = first["version"]
    assert run("put", "--as", "bob", "/scratch/d/a.md", input="two\n").exit_code == 0
    conflict = run(
        "put", "--as", "bob", "/scratch/d/a.md", "--if-version", stale, "--json", input="x"
    )
    assert conflict.exit_code == 1 and error_of(conflict)["error"] == "conflict"
    folder = run("rm", "--as", "bob", "/scratch/d", "--json")
    assert folder.exit_code == 1 and error_of(folder)["error"] == "directory_not_empty"
    assert run("rm", "--as", "bob", "/scratch/d", "-r").exit_code == 0
    gone = run("stat", "--as", "bob", "/scratch/d", "--json")
    assert error_of(gone)["error"] == "not_found"


def test_index_progress_is_a_line_on_stderr_unless_quiet(demo: Path, run: Run) -> None:
    loud = run("index")
    assert "indexing: 17/17" in loud.stderr and "indexing" not in loud.stdout
    quiet = run("index", "-q")
    assert quiet.stderr == ""


def test_a_large_file_reports_its_progress_segment_by_segment(starter: Path, run: Run) -> None:
    line = "Auditors count the ledger twice before the quarter closes.\n"
    (starter / "docs" / "big.txt").write_text(line * (2_500_000 // len(line)))
    done = run("index")
    assert done.exit_code == 0, done.output
    steps = [ln for ln in done.stderr.splitlines() if "/docs/big.txt" in ln]
    assert len(steps) >= 2 and steps[-1].startswith("indexing: /docs/big.txt 100% (")
    assert run("index", "-q").stderr == ""
