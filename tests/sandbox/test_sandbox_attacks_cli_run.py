"""Red team of ``bastion run``, with real bubblewrap: every refusal is one line (no traceback),
the exit status is the command's (``128 + N`` for a signal, ``137`` for a limit's kill), and
odd input (bytes that are no UTF-8 in an argument or in the output, a command past the
kernel's argument limit, a folder that is hidden, a file given as the folder, a bad
allow-list entry) is answered as the tool answers it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bastion.cli import main


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _one_line_error(result: Result) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.usefixtures("runnable")
def test_limits_end_with_137_and_say_which() -> None:
    slow = _run("run", "--as", "bob", "--timeout", "1", "echo started; sleep 20; echo done")
    assert slow.exit_code == 137 and slow.stdout == "started\n"
    assert "stopped: the timeout limit" in slow.stderr
    as_json = _run("run", "--as", "bob", "--json", "--timeout", "1", "sleep 20")
    data = json.loads(as_json.stdout)
    assert as_json.exit_code == 137 and data["limit"] == "timeout" and data["signal"] == "SIGKILL"
    killed = _run("run", "--as", "bob", "kill -TERM $$")
    assert killed.exit_code == 128 + 15


@pytest.mark.usefixtures("runnable")
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--cwd", "/nowhere", "true"), "not a folder"),
        (("--cwd", "/docs/a.md", "true"), "not a folder"),
        (("--cwd", "relative", "true"), ""),
        (("--stdin", "x" * 100_001, "true"), ""),
        (("é" * 70_000,), ""),
        (("--network", "*", "true"), "allow-list entry"),
        (("--network", "a b.com", "true"), "allow-list entry"),
        (("--network", "example.com:0", "true"), "port"),
        (("--network", "example.com:99999", "true"), "port"),
    ],
)
def test_refusals_are_one_line(args: tuple[str, ...], says: str) -> None:
    result = _run("run", "--as", "bob", *args)
    assert result.exit_code in (1, 2), result.output
    line = _one_line_error(result)
    assert says in line
    data = _run("run", "--as", "bob", "--json", *args)
    assert data.exit_code == result.exit_code
    if data.exit_code == 1:  # an error of the call: the JSON error object
        assert set(json.loads(data.stderr)) == {"error", "message"}


@pytest.mark.usefixtures("runnable")
def test_bytes_that_are_no_utf8_in_arguments_and_output() -> None:
    # an argument that is no text (a byte the shell passed as is): refused by the tool's
    # validation, in one line, nothing run
    result = _run("run", "--as", "bob", "--", "printf", "%s|", "x\udcff")
    assert result.exit_code == 1 and "lone surrogate" in _one_line_error(result)
    assert result.stdout == ""
    as_json = _run("run", "--as", "bob", "--json", "printf 'a\\377b'")
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout)["stdout"] == "a\ufffdb"


@pytest.mark.usefixtures("runnable")
def test_a_hidden_or_refused_folder_is_refused_like_a_missing_one(runnable: Path) -> None:
    denied = _run("run", "--as", "guest", "true")
    assert denied.exit_code == 1
    assert "not allowed by policy" in _one_line_error(denied)
    missing = _run("run", "--as", "bob", "--cwd", "/scratch/none", "true")
    assert missing.exit_code == 1 and "/scratch/none" in _one_line_error(missing)
