"""``bastion overlay changes|apply|discard PREFIX`` over a workspace file with an overlay
mount: the list, the apply into the base folder (exit 1 on a conflict, kept), a thread's
own layer, and a discard."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bastion.cli import main
from bastion.config import WorkspaceConfig


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.md").write_text("base\n")
    config = tmp_path / "bastion.toml"
    config.write_text(
        '[[mounts]]\nprefix = "/code"\nurl = "file:project"\noverlay = true\n'
        "[policy]\nrules = [{ effect = 'allow', actions = ['*'], paths = ['/**'] }]\n"
        '[users.ana]\ntenant = "default"\n'
    )
    return config


def _run(config: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    done = CliRunner().invoke(main, [*args, "--config", str(config), "--as", "ana"], input=stdin)
    return done.exit_code, done.stdout


def test_review_apply_and_discard_from_the_command_line(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    assert _run(config, "put", "/code/a.md", "--no-index", stdin="mine\n")[0] == 0
    assert _run(config, "put", "/code/b.md", "--no-index", stdin="bee\n")[0] == 0
    code, out = _run(config, "overlay", "changes", "/code", "--json")
    assert code == 0, out
    assert json.loads(out) == {
        "changes": [
            {"path": "/code/a.md", "action": "write", "status": "modified", "conflict": False},
            {"path": "/code/b.md", "action": "write", "status": "added", "conflict": False},
        ]
    }
    assert (tmp_path / "project" / "a.md").read_text() == "base\n"
    code, out = _run(config, "overlay", "discard", "/code", "/code/b.md")
    assert (code, out.strip()) == (0, "dropped  /code/b.md")
    code, out = _run(config, "overlay", "apply", "/code")
    assert (code, out.strip()) == (0, "applied  /code/a.md")
    assert (tmp_path / "project" / "a.md").read_text() == "mine\n"
    assert not (tmp_path / "project" / "b.md").exists()


def test_a_conflict_is_kept_and_exits_one(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    with WorkspaceConfig.from_file(config).opened(index_on_open=False) as aio:
        aio.sync().with_thread("t1").write("/code/a.md", "thread\n")
    (tmp_path / "project" / "a.md").write_text("someone else\n")
    code, out = _run(config, "overlay", "apply", "/code", "--thread", "t1")
    assert code == 1
    assert "conflict /code/a.md" in out
    code, out = _run(config, "overlay", "changes", "/code", "--thread", "t1")
    assert (code, out.strip()) == (
        0,
        "write   modified  /code/a.md  (conflict: changed in the base since)",
    )
    assert (tmp_path / "project" / "a.md").read_text() == "someone else\n"


def test_the_diff_from_the_command_line(tmp_path: Path) -> None:
    config = _workspace(tmp_path)
    assert _run(config, "put", "/code/a.md", "--no-index", stdin="mine\n")[0] == 0
    with WorkspaceConfig.from_file(config).opened(index_on_open=False) as aio:
        aio.sync().mkdir("/code/empty")
    code, out = _run(config, "overlay", "diff", "/code")
    assert code == 0, out
    assert out == (
        "--- a/code/a.md\n+++ b/code/a.md\n@@ -1 +1 @@\n-base\n+mine\nNew folder /code/empty\n"
    )
    code, out = _run(config, "overlay", "diff", "/code", "/code/a.md", "--json")
    assert json.loads(out) == {
        "diff": "--- a/code/a.md\n+++ b/code/a.md\n@@ -1 +1 @@\n-base\n+mine\n"
    }
    done = CliRunner().invoke(
        main, ["overlay", "diff", "/code", "/code/nothing.md", "--config", str(config)]
    )
    assert done.exit_code != 0 and "no change at /code/nothing.md" in done.output
    assert _run(config, "overlay", "apply", "/code")[0] == 0
    assert (tmp_path / "project" / "empty").is_dir()
    assert _run(config, "overlay", "diff", "/code")[1].strip() == "no changes"
