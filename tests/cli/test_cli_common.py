"""Shared options: the workspace file, who asks, JSON errors with stable codes, exit codes."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Run, as_json, error_of

import bastion.core.errors as errors
import bastion.core.extras as extras
import bastion.governance.errors as auth_errors
from bastion.cli import main
from bastion.cli.errors import ERROR_CODES, error_code


def test_every_error_class_has_a_stable_code() -> None:
    classes = [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.BastionError)
    ]
    codes = {cls: error_code(cls("x")) for cls in classes}
    assert all(code != "error" for cls, code in codes.items() if cls is not errors.BastionError)
    assert codes[errors.NoMountError] == codes[errors.NotFoundError] == "not_found"
    assert codes[errors.ScopeError] == "scope_denied"
    assert codes[errors.StoreUnavailableError] == "store_unavailable"
    token = [
        cls
        for _, cls in inspect.getmembers(auth_errors, inspect.isclass)
        if issubclass(cls, auth_errors.AuthenticationError)
    ]
    assert {error_code(cls("x")) for cls in token} == {"unauthenticated"}
    # one table (the classes' own codes), each code a plain identifier
    assert all(code.replace("_", "").isalpha() for code in codes.values())


def test_usage_errors_exit_2_with_a_json_error(demo: Path, run: Run) -> None:
    result = run("ls", "--no-such-option", "--json")
    assert result.exit_code == 2
    assert error_of(result)["error"] == "usage" and "no-such-option" in error_of(result)["message"]
    plain = run("ls", "--no-such-option")
    assert plain.exit_code == 2 and "Usage:" in plain.stderr


def test_unknown_user_names_the_known_ones(demo: Path, run: Run) -> None:
    result = run("ls", "--as", "mallory", "--json")
    assert result.exit_code == 1
    error = error_of(result)
    assert error["error"] == "unknown_user" and "ana" in error["message"]


def test_as_and_token_together_is_a_usage_error(demo: Path, run: Run) -> None:
    result = run("ls", "--as", "ana", "--token", "x.y.z", "--json")
    assert result.exit_code == 2 and "one of them" in error_of(result)["message"]
    no_identity = run("ls", "--token", "x.y.z", "--json")
    assert no_identity.exit_code == 2 and "--identity" in error_of(no_identity)["message"]
    from_env = run("ls", "--json", env={"BASTION_TOKEN": "x.y.z"})
    assert from_env.exit_code == 2 and "--identity" in error_of(from_env)["message"]


def test_no_workspace_file_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("ls", "--json")
    assert result.exit_code == 1
    assert error_of(result)["error"] == "no_config"
    assert "bastion init" in error_of(result)["message"]


def test_config_option_names_another_file(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("ls", "--config", str(demo / "bastion.toml"), "--as", "tom", "/")
    assert result.exit_code == 0 and result.stdout.split() == ["tidewater/"]


def test_a_broken_config_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bastion.toml").write_text("colour = 1\n")
    result = run("ls", "--json")
    assert result.exit_code == 1
    assert error_of(result)["error"] == "configuration" and "colour" in error_of(result)["message"]


def test_users_file_and_config_users(demo: Path, tmp_path: Path, run: Run) -> None:
    users = tmp_path / "users.yaml"
    users.write_text("kim: {tenant: larkspur, roles: [hr], clearance: confidential}\n")
    result = run("ls", "--as", "kim", "--users", str(users), "/larkspur")
    assert "hr/" in result.stdout.split()
    # the file's [users] hold the demo people; the generic defaults are not among them
    assert error_of(run("ls", "--as", "admin", "--json"))["error"] == "unknown_user"


def test_help_names_the_default_users(run: Run) -> None:
    result = run("ls", "--help")
    assert result.exit_code == 0
    for user in ("ana", "mei", "zoe", "guest"):
        assert user in result.stdout
    assert "Exit codes" in run("--help").stdout


def test_without_identity_the_owner_acts_and_a_note_names_the_users(demo: Path, run: Run) -> None:
    result = run("ls", "/")  # every demo mount is labelled with a tenant: the owner sees none
    assert result.exit_code == 1
    assert "no --as, --token or default_user" in result.stderr and "ana" in result.stderr
    assert 'default_user = "' in result.stderr  # says how to name a default
    assert error_of(run("ls", "/", "--json"))["error"] == "not_found"


def test_the_owner_of_an_unlabelled_workspace_sees_it_without_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/scratch"\nurl = "memory://"\n'
        '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n'
    )
    result = run("ls", "/")
    assert result.exit_code == 0 and result.stdout.split() == ["scratch/"]
    assert result.stderr == ""


def test_a_real_process_prints_json_and_exits_with_the_code(demo: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "bastion.cli", "ls", "--as", "ana", "/larkspur", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert [e["name"] for e in __import__("json").loads(ok.stdout)["entries"]] == [
        "handbook",
        "public",
    ]
    hidden = subprocess.run(
        [
            sys.executable,
            "-m",
            "bastion.cli",
            "cat",
            "--as",
            "ana",
            "/larkspur/hr/salary-bands.md",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert hidden.returncode == 1 and hidden.stdout == ""
    assert __import__("json").loads(hidden.stderr)["error"] == "not_found"
    usage = subprocess.run(
        [sys.executable, "-m", "bastion.cli", "cat", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert usage.returncode == 2 and __import__("json").loads(usage.stderr)["error"] == "usage"


def test_main_is_a_click_group() -> None:
    assert {"ls", "cat", "put", "audit", "init", "config"} <= set(main.commands)
    assert as_json is not None


def test_docs_list_every_error_code() -> None:
    import re

    root = Path(__file__).parents[2]
    text = (root / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text[text.index("## Errors and exit codes") :]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))
    raised = set(
        re.findall(
            r'code="([a-z_]+)"',
            "".join(
                p.read_text(encoding="utf-8")
                for p in (root / "src" / "bastion" / "cli").glob("*.py")
            ),
        )
    )
    tree = {
        cls.code
        for module in (errors, auth_errors, extras)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, errors.BastionError)
    }
    assert tree | set(ERROR_CODES.values()) | raised == documented


def test_every_command_takes_json(run: Run) -> None:
    def commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        found = []
        for name, command in getattr(group, "commands", {}).items():
            if hasattr(command, "commands"):
                found += commands(command, (*prefix, name))
            else:
                found.append((*prefix, name))
        return found

    missing = [c for c in commands(main) if "--json" not in run(*c, "--help").stdout]
    assert missing == [("serve",)]  # the server's command belongs to the server (docs/server.md)
