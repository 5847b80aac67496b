"""Parity of the change journal: two worlds that differ only by changes the principal may not
see (a document hidden by its labels, written after the visible ones) give the same answers
to changes, diff, undo and revert, at every front end that offers them: the Python library,
the command line, and HTTP (the API, which the web page's Changes tab calls as it is).

A hidden change's diff and undo answer exactly as a change that does not exist. Ids are the
journal's own order, so a change made after a hidden one gets a later id in the full world:
the listings after a change are compared by position (docs/decisions/, "Review and undo").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from bastion import Principal
from bastion.cli import main
from bastion.config import WorkspaceConfig, load_workspace
from bastion.server.app import create_app
from bastion.server.settings import ServerSettings
from server.support import running

ANA = Principal.of("ana", tenant="acme", roles=("staff",), clearance="internal")
WRITER = Principal.of("wren", tenant="acme", roles=("staff",), clearance="restricted")
"""Who made the history: cleared for the hidden document."""
SECRET = "TOPSECRET"
HIDDEN = f"---\nclassification: restricted\n---\n{SECRET}\n"
CONFIG = """
[[mounts]]
prefix = "/docs"
url = "file:docs"
scope = "read_write"
labels = { tenant = "acme", classification = "internal" }

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]

[users.ana]
tenant = "acme"
roles = ["staff"]
clearance = "internal"

[journal]
path = "journal.db"
"""

# (operation, argument): what every front end is asked, in this order.
STEPS: tuple[tuple[str, Any], ...] = (
    ("changes", None),
    ("diff", 2),
    ("diff", 4),  # hidden in the full world, missing in the bare one
    ("undo", 4),
    ("undo", 5),  # missing in both
    ("undo", 1),  # a.md changed since: a conflict, nothing undone
    ("revert", "t"),
    ("changes", None),
)


def _world(root: Path, *, full: bool) -> Path:
    (root / "docs").mkdir(parents=True)
    config = root / "bastion.toml"
    config.write_text(CONFIG, encoding="utf-8")
    ws = load_workspace(config, principal=WRITER).sync().with_thread("t")
    ws.write("/docs/a.md", "one\n")
    ws.write("/docs/a.md", "two\n")
    ws.write("/docs/b.md", "bee\n")
    if full:  # after the visible ones: the ids ana sees are the same in both worlds
        ws.write("/docs/secret.md", HIDDEN)
        ws.write("/docs/secret.md", HIDDEN + "more\n")
    return config


def _plain(answer: Any, positions: bool) -> Any:
    """The answer without times, and (``positions``) each change list's ids replaced by the
    change's place in the list."""
    if isinstance(answer, list):
        return [_plain(x, positions) for x in answer]
    if not isinstance(answer, dict):
        return answer
    out = {k: _plain(v, positions) for k, v in answer.items() if k != "at"}
    found = out.get("changes")
    if positions and isinstance(found, list) and found and isinstance(found[0], dict):
        out["changes"] = [{**c, "id": i} for i, c in enumerate(found)]
    return out


Front = Callable[[Path], Iterator[Callable[[str, Any], Any]]]


def library(config: Path) -> Iterator[Callable[[str, Any], Any]]:
    from bastion.workspace.operations.changes import ChangeOut, RollbackResult

    ws = load_workspace(config, principal=ANA).sync()

    def call(op: str, arg: Any) -> Any:
        try:
            if op == "changes":
                return {"changes": [ChangeOut.of(c).model_dump() for c in ws.changes()]}
            if op == "diff":
                return ws.diff(arg)
            done = ws.undo(arg) if op == "undo" else ws.revert(arg)
            return RollbackResult.of(done).model_dump()
        except Exception as exc:  # the answer is what is compared
            return [type(exc).__name__, str(exc)]

    yield call


def cli(config: Path) -> Iterator[Callable[[str, Any], Any]]:
    def call(op: str, arg: Any) -> Any:
        args = [op, *([] if arg is None else [str(arg)])]
        result = CliRunner().invoke(main, [*args, "--json", "--config", str(config), "--as", "ana"])
        out = result.stdout.strip()
        return [result.exit_code, json.loads(out) if out else None, result.stderr]

    yield call


def http(config: Path) -> Iterator[Callable[[str, Any], Any]]:
    app = create_app(
        WorkspaceConfig.from_file(config).build(owner=True),
        settings=ServerSettings(demo_login=True),
        demo_users=[(ANA, "parity")],
    )
    with running(app) as url, httpx.Client(base_url=url) as client:
        token = client.post("/v1/auth/demo", json={"user": "ana"}).json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"

        def call(op: str, arg: Any) -> Any:
            if op == "changes":
                r = client.get("/v1/changes")
            elif op == "diff":
                r = client.get("/v1/changes/diff", params={"change": arg})
            elif op == "undo":
                r = client.post("/v1/changes/undo", json={"change": arg})
            else:
                r = client.post("/v1/changes/revert", json={"thread": arg})
            return [r.status_code, r.json()]

        yield call


FRONTS: dict[str, Front] = {"python": library, "cli": cli, "http-api": http}


@pytest.mark.parametrize("front", sorted(FRONTS))
def test_changes_diff_undo_answer_alike_in_both_worlds(front: str, tmp_path: Path) -> None:
    answers: dict[str, list[Any]] = {}
    for name in ("full", "bare"):
        config = _world(tmp_path / name, full=name == "full")
        got: list[Any] = []
        for call in FRONTS[front](config):
            after_a_change = False
            for op, arg in STEPS:
                answer = call(op, arg)
                got.append(_plain(answer, after_a_change))
                after_a_change = after_a_change or op in ("undo", "revert")
        answers[name] = got
        assert SECRET not in json.dumps(got)
        if name == "full":  # the hidden document is untouched by ana's undo and revert
            assert (tmp_path / name / "docs" / "secret.md").read_text().startswith("---")
    for step, (full, bare) in enumerate(zip(answers["full"], answers["bare"], strict=True)):
        assert full == bare, (front, STEPS[step])
    # the answers are the operations' own: one listing of the three visible changes, a diff,
    # the hidden change refused as missing, a conflict, a revert of the visible changes
    first, diff = answers["full"][0], answers["full"][1]
    assert "/docs/a.md" in json.dumps(first) and "secret" not in json.dumps(first)
    assert "-one" in json.dumps(diff) and "+two" in json.dumps(diff)
    assert (tmp_path / "full" / "docs" / "a.md").exists() is False
