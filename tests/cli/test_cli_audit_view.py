"""``bastion audit`` as a principal reads it: what it asked and what it was told, never the
checks made on its behalf (against main, after a search ``--path /drive/hr`` listed
``exists /drive/hr/reorg-plan.md allowed`` under dana's name); every record printable
whatever its request held; the log read a page at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import Run, as_json, error_of
from world import world as _world

from bastion.config import WorkspaceConfig
from bastion.core.audit import AuditRecord, on_behalf
from bastion.core.audit_sinks import JsonLinesAuditSink, audit_page


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run) -> Path:
    root = _world(tmp_path / "w", hidden=True)
    monkeypatch.chdir(root)
    assert run("index").exit_code == 0
    (root / ".bastion" / "audit.jsonl").unlink()  # the owner's index run: not dana's
    return root


def _records(run: Run, *args: str) -> list[dict[str, Any]]:
    result = run("audit", *args, "--json")
    assert result.exit_code == 0, result.output
    page = as_json(result)
    assert set(page) == {"records", "next"}
    records: list[dict[str, Any]] = page["records"]
    return records


def test_a_search_leaves_dana_one_record_and_no_hit_check(world: Path, run: Run) -> None:
    for query in ("Osprey", "reorg Leeds", "acquire Osprey Telematics 22 million"):
        assert run("search", "--as", "dana", query).exit_code == 0
    assert run("ask", "--as", "dana", "Who moves to Leeds?").exit_code == 0
    assert _records(run, "--as", "dana", "--path", "/drive/hr") == []
    mine = _records(run, "--as", "dana")
    assert {r["operation"] for r in mine} <= {"search", "ask"} | {
        r["operation"] for r in mine if r["operation"].startswith("ask.")
    }
    assert all(r["path"] == "/" for r in mine)
    text = run("audit", "--as", "dana").stdout
    for secret in ("reorg", "deals", "pay.txt", "minutes"):
        assert secret not in text


def test_checks_made_on_a_principals_behalf_are_the_operators_to_read(
    world: Path, run: Run
) -> None:
    config = WorkspaceConfig.from_file(world / "bastion.toml")
    sink = JsonLinesAuditSink(world / ".bastion" / "audit.jsonl")
    try:
        dana = config.build(principal=config.users["dana"], audit=sink).sync()
        with on_behalf():  # as a front end shaping an answer would
            assert dana.exists("/drive/hr/reorg-plan.md") is False
            assert dana.exists("/drive/plan.md") is True
            dana.list("/drive/hr") if dana.exists("/drive/hr") else None
        dana.stat("/drive/plan.md")  # her own request
    finally:
        sink.close()
    mine = _records(run, "--as", "dana")
    assert [(r["operation"], r["path"], r["internal"]) for r in mine] == [
        ("stat", "/drive/plan.md", False)
    ]
    assert _records(run, "--as", "dana", "--path", "/drive/hr") == []
    everything = _records(run)  # the owner reads every record, marked
    internal = [(r["path"], r["internal"]) for r in everything if r["internal"]]
    assert ("/drive/hr/reorg-plan.md", True) in internal and len(internal) >= 2
    assert "reorg-plan" not in run("audit", "--as", "dana").stdout


@pytest.mark.parametrize(
    "path",
    [
        "/drive/\udcff.md",  # an OS name that is not UTF-8, decoded with surrogateescape
        "/drive/\ud800",  # a lone high surrogate
        "/drive/a\udc80b/\udfff",
        "/drive/\x1b[2J\x07bell",  # a terminal escape: never written raw to the screen
        "/drive/\x00nul",
        "/drive/\u202eevil.md",  # a right-to-left override
    ],
)
def test_any_request_leaves_a_record_every_reader_can_print(
    world: Path, run: Run, path: str
) -> None:
    refused = run("cat", "--as", "dana", path)
    assert refused.exit_code in (1, 2), refused.output
    for who in (("--as", "dana"), ()):
        text = run("audit", *who)
        assert text.exit_code == 0, text.output
        assert "\x1b" not in text.stdout and "\x07" not in text.stdout
        assert "\x00" not in text.stdout and "\u202e" not in text.stdout
        records = _records(run, *who)
        assert records and all(json.dumps(r).isascii() for r in records)
        shown = records[-1]["path"]
        shown.encode("utf-8")
        assert shown == path.encode("utf-8", "backslashreplace").decode("utf-8")


def test_a_log_written_before_holds_escapes_and_still_reads(world: Path, run: Run) -> None:
    log = world / ".bastion" / "audit.jsonl"
    log.parent.mkdir(exist_ok=True)
    line = {"time": 1.0, "principal": "dana", "tenant": "acme", "operation": "read"}
    with log.open("ab") as f:  # what main wrote for a lone surrogate: a \ud800 escape
        f.write(json.dumps({**line, "path": "/d\ud800", "allowed": False, "reason": "x"}).encode())
        f.write(b"\n\xff\xfe not a record\n")
    text = run("audit", "--as", "dana")
    assert text.exit_code == 0 and "dana@acme read /d\\ud800 refused: x" in text.stdout
    assert [r["path"] for r in _records(run, "--as", "dana")] == ["/d\\ud800"]


def test_the_log_is_read_a_page_at_a_time(world: Path, run: Run) -> None:
    for name in ("plan.md", "notes/todo.txt", "public/careers.md", "deals.md", "nope.md"):
        run("stat", "--as", "dana", f"/drive/{name}")
    whole = _records(run, "--as", "dana")
    assert len(whole) == 5
    for limit in (1, 2, 4, 5, 9):
        pages, cursor = [], None
        while True:
            args = [
                "--as",
                "dana",
                "--limit",
                str(limit),
                *(["--cursor", cursor] if cursor else []),
            ]
            page = as_json(run("audit", *args, "--json"))
            pages.append(page["records"])
            cursor = page["next"]
            if cursor is None:
                break
        assert [r for page in reversed(pages) for r in page] == whole
    text = run("audit", "--as", "dana", "--limit", "2")
    assert len(text.stdout.splitlines()) == 2
    assert text.stderr.startswith("note: older records: add --cursor ")
    refused = _records(run, "--as", "dana", "--outcome", "refused", "--limit", "1")
    assert [r["path"] for r in refused] == ["/drive/nope.md"]
    older = as_json(run("audit", "--as", "dana", "--outcome", "refused", "--limit", "1", "--json"))
    again = run(
        "audit", "--as", "dana", "--outcome", "refused", "--cursor", older["next"], "--json"
    )
    assert [r["path"] for r in as_json(again)["records"]] == ["/drive/deals.md"]
    assert as_json(again)["next"] is None


@pytest.mark.parametrize("cursor", ["x", "-1", "99", "1.5", "٣", ""])
def test_a_cursor_that_is_not_one_is_a_usage_error(world: Path, run: Run, cursor: str) -> None:
    result = run("audit", "--as", "dana", "--limit", "1", "--cursor", cursor, "--json")
    if cursor == "":  # an empty cursor is none: the newest page
        assert result.exit_code == 0
        return
    assert result.exit_code == 2 and error_of(result)["error"] == "usage"
    assert "cursor" in error_of(result)["message"]


def _record(n: int, principal: str = "p") -> AuditRecord:
    return AuditRecord(float(n), principal, "t", "read", f"/{n}", True, "allowed")


def test_a_page_says_next_only_when_older_records_match() -> None:
    records = [_record(n, "a" if n % 3 == 0 else "b") for n in range(10)]
    page = audit_page(records, limit=2, keep=lambda r: r.principal == "a")
    assert [r.time for r in page.records] == [6.0, 9.0] and page.next == "6"
    last = audit_page(records, limit=2, cursor=page.next, keep=lambda r: r.principal == "a")
    assert [r.time for r in last.records] == [0.0, 3.0] and last.next is None
    assert audit_page([], limit=3) == audit_page(records, limit=3, cursor="0")
    assert audit_page(records, limit=None).records == tuple(records)
    for bad in ("11", "a", "-0", "+1", "1_0"):
        with pytest.raises(ValueError, match="cursor"):
            audit_page(records, limit=1, cursor=bad)
    with pytest.raises(ValueError, match="limit"):
        audit_page(records, limit=0)
