"""``bastion run``: the ``execute`` tool on the command line. Its options are the tool's
parameters (derived, not re-written), its exit status is the command's, ``--json`` prints the
tool's result, and the guard and the tool's validation apply as they do for an agent.

Real bubblewrap (skipped only where it cannot start, saying why).
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Run, as_json, error_of

from bastion.agents.tools.execute import execute


def test_output_and_exit_status_are_the_commands(runnable: Path, run: Run) -> None:
    result = run(
        "run",
        "--as",
        "bob",
        "--cwd",
        "/scratch",
        "cat /docs/a.md; echo new > n.txt; echo oops >&2; exit 3",
    )
    assert result.exit_code == 3
    assert result.stdout == "hello\n"
    assert result.stderr == "oops\nchanged: /scratch/n.txt\n"
    assert (runnable / "scratch" / "n.txt").read_text() == "new\n"


def test_json_prints_the_tools_result(runnable: Path, run: Run) -> None:
    result = run("run", "--as", "bob", "--json", "--stdin", "abc", "--", "wc", "-c")
    assert result.exit_code == 0
    data = as_json(result)
    assert data["success"] is True and data["exit_code"] == 0
    assert data["stdout"].strip() == "3" and data["changed"] == []
    assert set(data) >= {"exit_code", "stdout", "stderr", "duration", "changed"}
    failing = run("run", "--as", "bob", "--json", "exit 7")
    assert failing.exit_code == 7 and as_json(failing)["exit_code"] == 7


def test_several_words_are_a_program_and_its_arguments(runnable: Path, run: Run) -> None:
    result = run("run", "--as", "bob", "--", "printf", "%s|", "a b", "$HOME")
    assert result.exit_code == 0 and result.stdout == "a b|$HOME|"


def test_a_signal_is_128_plus_its_number(runnable: Path, run: Run) -> None:
    assert run("run", "--as", "bob", "kill -9 $$").exit_code == 137


def test_a_refused_change_is_said_and_not_applied(runnable: Path, run: Run) -> None:
    result = run("run", "--as", "bob", "--json", "echo x > /c.txt")
    data = as_json(result)
    assert list(data["refused"]) == ["/c.txt"] and not (runnable / "c.txt").exists()
    text = run("run", "--as", "bob", "echo x > /c.txt")
    assert text.exit_code == 0 and "refused: /c.txt:" in text.stderr


def test_the_guard_and_the_tools_checks_apply(runnable: Path, run: Run) -> None:
    denied = run("run", "--as", "guest", "--json", "true")
    assert denied.exit_code == 1
    assert error_of(denied) == {
        "error": "policy_denied",
        "message": "execute on / is not allowed by policy; ask an operator to grant it",
    }
    too_long = run("run", "--as", "bob", "--json", "--timeout", "301", "true")
    assert too_long.exit_code == 1 and "timeout over 300 s" in error_of(too_long)["message"]
    out_of_range = run("run", "--as", "bob", "--timeout", "0", "true")
    assert out_of_range.exit_code == 2 and "--timeout" in out_of_range.stderr
    empty = run("run", "--as", "bob", "--json", "  ")
    assert empty.exit_code == 1 and "empty" in error_of(empty)["message"]


def test_the_options_are_the_tools_parameters(run: Run) -> None:
    shown = run("run", "--help").stdout
    for name, info in execute.args.model_fields.items():
        if name in ("command", "background"):
            continue
        assert f"--{name}" in shown
        assert (info.description or "").split()[0] in shown
    assert "--background" not in shown
    assert json.dumps(sorted(execute.args.model_fields)) == json.dumps(
        ["background", "command", "cwd", "stdin", "timeout"]
    )


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello over the proxy\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def hello() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


def test_network_names_what_the_command_may_reach_and_each_request_is_audited(
    runnable: Path, run: Run, hello: int
) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed on this machine (the sandbox's client)")
    url = f"http://127.0.0.1:{hello}/"
    reached = run("run", "--as", "bob", "--network", f"127.0.0.1:{hello}", f"curl -sS {url}")
    assert reached.exit_code == 0 and reached.stdout == "hello over the proxy\n"
    cut_off = run("run", "--as", "bob", f"curl -sS {url}")
    assert cut_off.exit_code != 0 and cut_off.stdout == ""
    records = [
        json.loads(line)
        for line in (runnable / ".bastion" / "audit.jsonl").read_text().splitlines()
    ]
    egress = [r for r in records if r["operation"] == "egress"]
    assert [(r["principal"], r["allowed"], r["target"]) for r in egress] == [
        ("bob", True, f"127.0.0.1:{hello}")
    ]
    bad = run("run", "--as", "bob", "--json", "--network", "not a name", "true")
    assert bad.exit_code == 1 and "allow-list entry" in error_of(bad)["message"]
