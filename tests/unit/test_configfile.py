"""The one configuration reader (``bastion.configfile.read_table``) and the readers built on it:
one suffix rule, and every bad file is one line naming the file, never quoting its text."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.config import WorkspaceConfig, load_policy, load_users
from bastion.configfile import file_format, read_table
from bastion.core.errors import ConfigurationError
from bastion.governance.identity_config import IdentityConfig
from bastion.server.settings import read_tables


def _error(file: Path, what: str = "configuration file") -> str:
    with pytest.raises(ConfigurationError) as caught:
        read_table(file, what)
    message = str(caught.value)
    assert "\n" not in message
    assert str(file) in message
    return message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.toml", 'x = 1\n[t]\ny = "z"\n'),
        ("a.TOML", 'x = 1\n[t]\ny = "z"\n'),
        ("a.yaml", "x: 1\nt:\n  y: z\n"),
        ("a.yml", "x: 1\nt:\n  y: z\n"),
        ("a.YML", "x: 1\nt:\n  y: z\n"),
    ],
)
def test_one_suffix_rule_reads_toml_and_yaml_alike(tmp_path: Path, name: str, text: str) -> None:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    assert read_table(file) == {"x": 1, "t": {"y": "z"}}


def test_empty_files_are_empty_tables(tmp_path: Path) -> None:
    for name in ("e.toml", "e.yaml"):
        (tmp_path / name).write_text("", encoding="utf-8")
        assert read_table(tmp_path / name) == {}


@pytest.mark.parametrize("name", ["bastion.json", "bastion.conf", "bastion", "users.txt"])
def test_any_other_suffix_is_refused(tmp_path: Path, name: str) -> None:
    file = tmp_path / name
    file.write_text("x = 1\n", encoding="utf-8")
    assert _error(file, "policy file") == f"policy file {file} must end in .toml, .yaml or .yml"
    with pytest.raises(ConfigurationError, match=r"must end in \.toml, \.yaml or \.yml"):
        file_format(file)


def test_a_suffix_can_be_overridden_by_an_explicit_format(tmp_path: Path) -> None:
    file = tmp_path / "bastion.conf"
    file.write_text("x = 1\n", encoding="utf-8")
    assert read_table(file, fmt="TOML") == {"x": 1}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.toml", "[[mounts]\nprefix = ", "is not valid TOML: "),
        ("bad.yaml", "a: [1, 2\n", "is not valid YAML: "),
        ("bad.yml", "a: b: c\n", "is not valid YAML: "),
    ],
)
def test_a_malformed_file_is_one_line_naming_the_file(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    message = _error(file, "workspace file")
    assert message.startswith(f"workspace file {file} ")
    assert expected in message
    assert "line" in message  # says where


def test_a_yaml_error_never_quotes_the_line_it_is_on(tmp_path: Path) -> None:
    file = tmp_path / "identity.yaml"
    file.write_text('client_secret: "s3cr3t-value\nissuer: x: y\n', encoding="utf-8")
    assert "s3cr3t" not in _error(file, "identity file")


def test_a_toml_error_never_quotes_the_file(tmp_path: Path) -> None:
    file = tmp_path / "bastion.toml"
    file.write_text('password = "hunter2\n', encoding="utf-8")
    assert "hunter2" not in _error(file)


@pytest.mark.parametrize(
    ("name", "text"), [("list.yaml", "- a\n- b\n"), ("scalar.yaml", "just words\n")]
)
def test_a_top_level_that_is_not_a_table_is_refused(tmp_path: Path, name: str, text: str) -> None:
    file = tmp_path / name
    file.write_text(text, encoding="utf-8")
    assert _error(file).endswith("must be a table at the top level")


def test_unreadable_and_binary_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    assert _error(missing).startswith(f"cannot read configuration file {missing}: ")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00key: value")
    assert _error(binary).endswith("is not valid YAML: not UTF-8 text")


def test_every_reader_uses_the_one_rule(tmp_path: Path) -> None:
    """The workspace file, the server's tables, a policy, a users file and an identity file
    refuse the same suffix with the same line, each naming its kind of file."""
    file = tmp_path / "settings.json"
    file.write_text("{}", encoding="utf-8")
    readers = [
        ("workspace file", lambda: WorkspaceConfig.from_file(file)),
        ("workspace file", lambda: read_tables(file)),
        ("policy file", lambda: load_policy(file)),
        ("users file", lambda: load_users(file)),
        ("identity file", lambda: IdentityConfig.from_file(file)),
    ]
    for what, read in readers:
        with pytest.raises(ConfigurationError) as caught:
            read()
        assert str(caught.value) == f"{what} {file} must end in .toml, .yaml or .yml"


def test_every_reader_reports_a_malformed_file_alike(tmp_path: Path) -> None:
    file = tmp_path / "settings.yaml"
    file.write_text("a: [1, 2\n", encoding="utf-8")
    readers = [
        ("workspace file", lambda: WorkspaceConfig.from_file(file)),
        ("policy file", lambda: load_policy(file)),
        ("users file", lambda: load_users(file)),
        ("identity file", lambda: IdentityConfig.from_file(file)),
    ]
    for what, read in readers:
        with pytest.raises(ConfigurationError) as caught:
            read()
        assert str(caught.value).startswith(f"{what} {file} is not valid YAML: ")
