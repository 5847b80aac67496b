"""``bastion serve`` as a command: a real process on loopback, and the refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import bastion
from bastion.cli import main

from .support import free_port


def test_the_demo_on_a_public_address_is_refused_with_the_fix() -> None:
    result = CliRunner().invoke(main, ["serve", "--demo", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "refusing to listen on 0.0.0.0 with demo_login on" in result.output
    assert "listen on 127.0.0.1" in result.output


def test_without_a_bastion_toml_here_config_or_demo_is_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 2 and "no bastion.toml in this folder" in result.output
    assert "--config FILE or --demo" in result.output
    both = CliRunner().invoke(main, ["serve", "--demo", "--config", "bastion.toml"])
    assert both.exit_code == 2


def _serve_here(folder: Path, port: int) -> subprocess.Popen[bytes]:
    # Run in another folder, the child must import this very package.
    source = str(Path(bastion.__file__).resolve().parents[1])
    paths = [source, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONWARNINGS": "error", "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(
        [sys.executable, "-m", "bastion.cli", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=folder,
    )


def test_serve_reads_the_bastion_toml_here_and_a_busy_port_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["init"]).exit_code == 0
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        refused = _serve_here(tmp_path, port)
        output, _ = refused.communicate(timeout=60)
    assert refused.returncode == 1
    text = output.decode()
    errors = [line for line in text.splitlines() if line.startswith("Error:")]
    assert errors == [
        f"Error: port {port} on 127.0.0.1 is in use by another program; stop it or pass --port N"
    ]
    assert "Traceback" not in text and "bastion server on" not in text
    port = free_port()
    process = _serve_here(tmp_path, port)  # no --config: ./bastion.toml
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    assert f"bastion server on http://127.0.0.1:{port}/" in output.decode()


def test_serve_demo_runs_the_page_and_the_api() -> None:
    port = free_port()
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    process = subprocess.Popen(
        [sys.executable, "-m", "bastion.cli", "serve", "--demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        page = httpx.get(url)
        assert page.status_code == 200 and "<title>Bastion</title>" in page.text
        token = httpx.post(f"{url}/v1/auth/demo", json={"user": "omar"}).json()["token"]
        me = httpx.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {token}"}).json()
        assert me["id"] == "omar" and me["tenant"] == "larkspur"
        assert (
            httpx.get(f"{url}/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 401
        )
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    log = output.decode()
    assert "GET /v1/me 200 omar" in log and "GET /v1/me 401 -" in log
    assert token not in log and "Traceback" not in log
