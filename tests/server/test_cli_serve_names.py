"""``bastion serve --host 0.0.0.0`` says that the server's names must be listed, and answers
only the names it has (issue 23)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from click.testing import CliRunner

from bastion.cli import main

from .support import free_port

_FILE = """
[[mounts]]
prefix = "/m"
url = "memory://"

[policy]
rules = []

[server]
{names}

[identity]
issuer = "https://id.test"
audience = "bastion"
keys = [{{ algorithm = "HS256", secret_env = "ID_SECRET", kid = "k1" }}]
"""


def test_the_host_option_says_names_must_be_listed() -> None:
    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    assert "allowed_hosts" in " ".join(result.output.split())


def _serve(config: Path, port: int) -> tuple[str, list[int]]:
    """Serve ``config`` on every address; the notice it printed and the statuses of
    /healthz asked as 127.0.0.1, as bastion.example.com and as another name."""
    env = {**os.environ, "PYTHONWARNINGS": "error", "ID_SECRET": "s" * 40}
    command = [sys.executable, "-m", "bastion.cli", "serve", "--config", str(config)]
    process = subprocess.Popen(
        [*command, "--host", "0.0.0.0", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url)
                break
            except httpx.TransportError:
                pass
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        statuses = [
            httpx.get(url, headers={"Host": host}).status_code
            for host in ("127.0.0.1", "bastion.example.com", "other.example.com")
        ]
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    return output.decode(), statuses


def test_a_public_address_without_names_is_told_to_list_them(tmp_path: Path) -> None:
    (tmp_path / "bastion.toml").write_text(_FILE.format(names=""))
    output, statuses = _serve(tmp_path / "bastion.toml", free_port())
    assert "list this server's names in [server] allowed_hosts" in output
    assert statuses == [200, 421, 421]


def test_a_public_address_with_names_answers_them(tmp_path: Path) -> None:
    (tmp_path / "bastion.toml").write_text(
        _FILE.format(names='allowed_hosts = ["bastion.example.com"]')
    )
    output, statuses = _serve(tmp_path / "bastion.toml", free_port())
    assert "allowed_hosts" not in output and "Traceback" not in output
    assert statuses == [200, 200, 421]
