"""Every demo user sees through the command line exactly what the library shows them: the
same tree, hidden files not found like missing ones, no hidden name in any output."""

from __future__ import annotations

from pathlib import Path

from cli_support import Run, as_json, error_of

from bastion.config import WorkspaceConfig
from bastion.core.errors import NotFoundError
from bastion.demo.corpus import documents, users


def test_each_user_sees_what_the_library_shows_and_nothing_else(demo: Path, run: Run) -> None:
    config = WorkspaceConfig.from_file(demo / "bastion.toml")
    every = [doc.path for doc in documents()]
    for user in users():
        ws = config.build(principal=config.users[user.id]).sync()
        readable = set()
        for path in every:
            try:
                ws.stat(path)
                readable.add(path)
            except NotFoundError:
                pass
        tree = run("tree", "--as", user.id, "/", "--json")
        assert tree.exit_code == 0, (user.id, tree.output)
        files = {e["path"] for e in as_json(tree)["entries"] if e["kind"] == "file"}
        assert files == readable, user.id
        assert "hidden" not in as_json(tree) and tree.stderr == ""
        text = run("tree", "--as", user.id, "/").stdout
        assert len(text.splitlines()) == len(as_json(tree)["entries"]) + 1  # and the root
        hidden_paths = sorted(set(every) - readable)
        assert not [path for path in hidden_paths if path in text]
        for path in hidden_paths[::4]:  # a sample: each call opens the workspace again
            hidden = run("cat", "--as", user.id, path, "--json")
            assert hidden.exit_code == 1 and hidden.stdout == ""
            absent = path.rsplit("/", 1)[0] + "/no-such-file.md"
            missing = error_of(run("cat", "--as", user.id, absent, "--json"))
            error = error_of(hidden)
            assert error["error"] == missing["error"] == "not_found"
            assert error["message"].replace(path, "P") == missing["message"].replace(absent, "P")
