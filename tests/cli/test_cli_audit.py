"""``bastion audit`` reads back the log named in bastion.toml, filtered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_support import Run, error_of
from cli_support import as_json as _json
from click.testing import Result

from bastion.cli.audit import parse_time


def as_json(result: Result) -> Any:
    """The records of one page of ``bastion audit --json``."""
    page = _json(result)
    assert set(page) == {"records", "next"}, page
    return page["records"]


def test_audit_filters_by_principal_action_outcome_and_path(demo: Path, run: Run) -> None:
    assert run("ls", "--as", "ana", "/larkspur").exit_code == 0
    assert run("cat", "--as", "ana", "/larkspur/hr/salary-bands.md").exit_code == 1
    assert run("cat", "--as", "mei", "/larkspur/hr/salary-bands.md").exit_code == 0
    everything = as_json(run("audit", "--json"))
    assert {(r["principal"], r["operation"]) for r in everything} >= {
        ("ana", "list"),
        ("ana", "read"),
        ("mei", "read"),
    }
    refused = as_json(run("audit", "--outcome", "refused", "--json"))
    assert [(r["principal"], r["path"]) for r in refused] == [
        ("ana", "/larkspur/hr/salary-bands.md")
    ]
    reads = as_json(run("audit", "--principal", "mei", "--action", "read", "--json"))
    assert len(reads) == 1 and reads[0]["allowed"] is True
    under = as_json(run("audit", "--path", "/larkspur/hr", "--json"))
    assert {r["principal"] for r in under} == {"ana", "mei"}
    assert as_json(run("audit", "--since", "1h", "--json")) == everything
    assert as_json(run("audit", "--until", "2000-01-01", "--json")) == []
    assert len(as_json(run("audit", "--limit", "1", "--json"))) == 1
    plain = run("audit", "--outcome", "refused")
    assert "ana@larkspur read /larkspur/hr/salary-bands.md refused" in plain.stdout
    assert plain.stderr == ""  # the owner reads the whole log: no note about --as


def test_a_principal_reads_only_its_own_records(demo: Path, run: Run) -> None:
    run("cat", "--as", "mei", "/larkspur/hr/salary-bands.md")
    run("ls", "--as", "ana", "/larkspur")
    own = as_json(run("audit", "--as", "ana", "--json"))
    assert own and {r["principal"] for r in own} == {"ana"}
    # zoe is an executive (the demo policy grants her the audit action) of tidewater: none of
    # larkspur's records is hers to read; the owner (no --as) reads every record
    assert {r["principal"] for r in as_json(run("audit", "--json"))} >= {"ana", "mei"}
    run("ls", "--as", "tom", "/tidewater")
    theirs = as_json(run("audit", "--as", "zoe", "--json"))
    assert {r["tenant"] for r in theirs} == {"tidewater"}
    assert {r["principal"] for r in theirs} == {"tom"}
    text = run("audit", "--as", "zoe").stdout
    assert "larkspur" not in text and "mei" not in text


def test_no_audit_log_is_an_error_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/m"\nurl = "memory://"\n'
        '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n'
    )
    result = run("audit", "--json")
    assert result.exit_code == 1 and error_of(result)["error"] == "no_audit_log"
    assert "audit =" in error_of(result)["message"]


def test_times() -> None:
    assert parse_time("2h", now=10_000.0) == 2_800.0
    assert parse_time("1970-01-01T00:01:00") == 60.0
    assert parse_time("1970-01-01T01:00:00+01:00") == 0.0


def test_a_bad_time_is_a_usage_error(demo: Path, run: Run) -> None:
    result = run("audit", "--since", "yesterday", "--json")
    assert result.exit_code == 2 and error_of(result)["error"] == "usage"
