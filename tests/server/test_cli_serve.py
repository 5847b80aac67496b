"""``bastion serve`` as a command: a real process on loopback, and the refusals."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
from click.testing import CliRunner

from bastion.cli import main

from .support import free_port


def test_the_demo_on_a_public_address_is_refused_with_the_fix() -> None:
    result = CliRunner().invoke(main, ["serve", "--demo", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "refusing to listen on 0.0.0.0 with demo_login on" in result.output
    assert "listen on 127.0.0.1" in result.output


def test_config_or_demo_is_required() -> None:
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 2 and "give either --config FILE or --demo" in result.output


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
