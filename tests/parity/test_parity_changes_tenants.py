"""Parity of the change journal across tenants: two worlds that differ only by what another
tenant did (a checkpoint it named, a change made by its principal that bears the viewer's
own id) give the same answers to checkpoints, restore, checkpoint and undo-last at the Python
library, the command line and HTTP. Another tenant's checkpoint is neither listed nor
restorable, its name is free, and "your own last change" is never another tenant's."""

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
OTHER_ANA = Principal.of("ana", tenant="globex", roles=("staff",), clearance="internal")
CONFIG = """
[[mounts]]
prefix = "/shared"
url = "file:shared"
scope = "read_write"

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]

[users.ana]
tenant = "acme"
roles = ["staff"]
clearance = "internal"

[journal]
path = "journal.db"
"""

CHECKPOINT_STEPS: tuple[tuple[str, Any], ...] = (
    ("checkpoints", None),
    ("restore", "q3"),  # globex's in the full world, nobody's in the bare one
    ("checkpoint", "q3"),  # its id: the last change ana may see, not the journal's count
    ("checkpoints", None),
)
UNDO_STEPS: tuple[tuple[str, Any], ...] = (("undo_last", None),)
"""In the full world globex's ana changed a file acme's ana may see."""


def _world(root: Path, *, full: bool, steps: tuple[tuple[str, Any], ...]) -> Path:
    (root / "shared").mkdir(parents=True)
    config = root / "bastion.toml"
    config.write_text(CONFIG, encoding="utf-8")
    if full:
        other = load_workspace(config, principal=OTHER_ANA).sync()
        if steps is CHECKPOINT_STEPS:  # changes acme's ana may not see, then a checkpoint
            other.write("/shared/globex.md", "---\ntenant: globex\n---\nglobex's\n")
            other.checkpoint("q3")
            other.write("/shared/globex.md", "---\ntenant: globex\n---\nglobex's two\n")
        else:
            other.write("/shared/globex.md", "globex's\n")
    return config


def _plain(answer: Any) -> Any:
    if isinstance(answer, list):
        return [_plain(x) for x in answer]
    if not isinstance(answer, dict):
        return answer
    return {k: _plain(v) for k, v in answer.items() if k != "at"}


Front = Callable[[Path], Iterator[Callable[[str, Any], Any]]]


def library(config: Path) -> Iterator[Callable[[str, Any], Any]]:
    from bastion.workspace.operations.changes import (
        CheckpointOut,
        CheckpointsResult,
        RollbackResult,
    )

    ws = load_workspace(config, principal=ANA).sync()

    def call(op: str, arg: Any) -> Any:
        try:
            if op == "checkpoints":
                found = [CheckpointOut.of(c) for c in ws.checkpoints()]
                return CheckpointsResult(checkpoints=found).model_dump()
            if op == "checkpoint":
                return CheckpointOut.of(ws.checkpoint(arg)).model_dump()
            done = ws.restore(arg) if op == "restore" else ws.undo_last()
            return RollbackResult.of(done).model_dump()
        except Exception as exc:
            return [type(exc).__name__, str(exc)]

    yield call


def cli(config: Path) -> Iterator[Callable[[str, Any], Any]]:
    def call(op: str, arg: Any) -> Any:
        args = {
            "checkpoints": ["checkpoint"],
            "checkpoint": ["checkpoint", str(arg)],
            "restore": ["restore", str(arg)],
            "undo_last": ["undo", "--last"],
        }[op]
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
            if op == "checkpoints":
                r = client.get("/v1/checkpoints")
            elif op == "checkpoint":
                r = client.post("/v1/checkpoints", json={"name": arg})
            elif op == "restore":
                r = client.post("/v1/checkpoints/restore", json={"checkpoint": arg})
            else:
                r = client.post("/v1/changes/undo-last")
            return [r.status_code, r.json()]

        yield call


FRONTS: dict[str, Front] = {"python": library, "cli": cli, "http-api": http}


@pytest.mark.parametrize("steps", [CHECKPOINT_STEPS, UNDO_STEPS], ids=["checkpoints", "undo"])
@pytest.mark.parametrize("front", sorted(FRONTS))
def test_checkpoints_and_undo_last_answer_alike_whatever_another_tenant_did(
    front: str, steps: tuple[tuple[str, Any], ...], tmp_path: Path
) -> None:
    answers: dict[str, list[Any]] = {}
    for name in ("full", "bare"):
        config = _world(tmp_path / name, full=name == "full", steps=steps)
        got = [_plain(call(op, arg)) for call in FRONTS[front](config) for op, arg in steps]
        answers[name] = got
        assert "globex" not in json.dumps(got)
        if name == "full":  # the other tenant's file is untouched by ana's undo and restore
            assert "globex's" in (tmp_path / name / "shared" / "globex.md").read_text()
    for step, (full, bare) in enumerate(zip(answers["full"], answers["bare"], strict=True)):
        assert full == bare, (front, steps[step])
    if steps is CHECKPOINT_STEPS:
        assert "q3" in json.dumps(answers["full"][-1])  # ana's own checkpoint, listed
