"""``bastion explain``: the mount, scope, deciding rule, role inheritance and label source of
one guard answer, on one screen; operators only (never with --token); audited."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Run


def _explain(run: Run, *args: str) -> dict[str, object]:
    done = run("explain", *args, "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_rule_reached_through_role_inheritance_is_shown_step_by_step(
    starter: Path, run: Run
) -> None:
    found = _explain(run, "--as", "alice", "/scratch/notes.md", "write")
    assert found["allowed"] is True
    rule = found["rule"]
    assert isinstance(rule, dict)
    assert rule["number"] == 2 and rule["roles"] == ["editor"]
    assert rule["through"] == ["admin", "editor"]  # alice is admin; admin inherits editor
    screen = run("explain", "--as", "alice", "/scratch/notes.md", "write").stdout
    assert "admin -> editor" in screen and ": ALLOWED" in screen.splitlines()[0]


def test_the_scope_of_a_mount_decides_before_any_rule(starter: Path, run: Run) -> None:
    found = _explain(run, "--as", "alice", "/docs/a.md", "write")
    assert found["allowed"] is False
    assert found["decided_by"] == "the scope of mount /docs (read_only)"


def test_the_default_deny_and_the_label_source_are_named(starter: Path, run: Run) -> None:
    (starter / "docs" / "plan.md").write_text(
        "---\nclassification: confidential\n---\n# Plan\n", encoding="utf-8"
    )
    guest = _explain(run, "--as", "guest", "/docs/plan.md")
    assert guest["allowed"] is False and guest["decided_by"] == "the document's labels"
    assert guest["label_source"] == "the document's own (front matter or sidecar)"
    assert isinstance(guest["labels"], dict) and guest["labels"]["classification"] == "confidential"
    denied = _explain(run, "--as", "guest", "/scratch/x.md", "write")
    assert denied["decided_by"] == "no rule matched (default deny)"


def test_explain_is_for_operators_and_is_audited(starter: Path, run: Run) -> None:
    assert run("explain", "/docs/a.md").exit_code == 2  # who to explain must be named
    token = run("explain", "--token", "x.y.z", "/docs/a.md")
    assert token.exit_code == 2 and "operator" in token.stderr
    assert run("explain", "--as", "bob", "/scratch/a.md", "write").exit_code == 0
    log = (starter / ".bastion" / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(log[-1])
    assert record["operation"] == "explain" and record["path"] == "/scratch/a.md"
    assert "for bob" in record["reason"]
