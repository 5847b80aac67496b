"""``bastion overlay`` and ``bastion put``/``cat`` as users of two tenants (decision 0104): the
other tenant reads the base, its review of the same thread finds nothing, and its writes
never reach the first tenant's review or apply."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bastion import Principal
from bastion.cli import main
from bastion.config import WorkspaceConfig


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.md").write_text("base\n")
    config = tmp_path / "bastion.toml"
    config.write_text(
        '[[mounts]]\nprefix = "/code"\nurl = "file:project"\noverlay = true\n'
        "[policy]\nrules = [{ effect = 'allow', actions = ['*'], paths = ['/**'] }]\n"
        '[users.ana]\ntenant = "acme"\n[users.bob]\ntenant = "globex"\n'
    )
    return config


def _run(config: Path, who: str, *args: str, stdin: str | None = None) -> tuple[int, str]:
    done = CliRunner().invoke(main, [*args, "--config", str(config), "--as", who], input=stdin)
    return done.exit_code, done.stdout


def _changes(config: Path, who: str, *thread: str) -> list[str]:
    code, out = _run(config, who, "overlay", "changes", "/code", "--json", *thread)
    assert code == 0, out
    return sorted(c["path"] for c in json.loads(out)["changes"])


def test_another_tenant_on_the_command_line_sees_the_base_and_plants_nothing(
    tmp_path: Path,
) -> None:
    config = _workspace(tmp_path)
    with WorkspaceConfig.from_file(config).opened(index_on_open=False) as aio:
        ana = aio.sync().with_principal(Principal.of("ana", tenant="acme"))
        ana.with_thread("t1").write("/code/a.md", "acme secret\n")
    assert _changes(config, "bob", "--thread", "t1") == []
    code, out = _run(config, "bob", "overlay", "diff", "/code", "--thread", "t1")
    assert code == 0 and "acme" not in out
    code, out = _run(config, "bob", "overlay", "apply", "/code", "/code/a.md", "--thread", "t1")
    assert code != 0 and "acme" not in out
    assert (tmp_path / "project" / "a.md").read_text() == "base\n"
    code, out = _run(config, "bob", "cat", "/code/a.md")
    assert (code, out) == (0, "base\n")
    assert _run(config, "bob", "put", "/code/b.md", "--no-index", stdin="globex\n")[0] == 0
    assert _changes(config, "ana", "--thread", "t1") == ["/code/a.md"]
    assert _changes(config, "ana") == []  # acme's own shared layer: bob's write is not there
    code, out = _run(config, "ana", "overlay", "apply", "/code", "--thread", "t1")
    assert (code, out.strip()) == (0, "applied  /code/a.md")
    assert (tmp_path / "project" / "a.md").read_text() == "acme secret\n"
    assert not (tmp_path / "project" / "b.md").exists()
    assert _changes(config, "bob") == ["/code/b.md"]
