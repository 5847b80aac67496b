"""An access change applies to the next request in every process: three servers started from
one workspace file; a role taken out of the file, and a token revoked with ``bastion token
revoke``, refuse the principal's next request (API and its MCP session) in each of them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bastion.cli import main

from .reload_support import SECRET, McpSession, token, workspace_file
from .support import free_port

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("toml_worker.py")


class Worker:
    def __init__(self, config: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        env = {**os.environ, "BASTION_TEST_SECRET": SECRET}
        self.log = config.parent / f"server-{self.url.rsplit(':', 1)[1]}.log"
        with self.log.open("wb") as err:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [sys.executable, str(WORKER), str(config), self.url.rsplit(":", 1)[1]],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(
                    self.process.stderr.read().decode() if self.process.stderr else ""
                )
            time.sleep(0.1)
        self.client = httpx.Client(base_url=self.url, timeout=30)

    def read(self, bearer: str) -> int:
        r = self.client.get(
            "/v1/files/read",
            params={"path": "/docs/plan.md"},
            headers={"Authorization": f"Bearer {bearer}"},
        )
        return r.status_code

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def three(tmp_path: Path) -> Iterator[tuple[Path, list[Worker]]]:
    config = workspace_file(tmp_path, index=False)
    started: list[Worker] = []
    try:
        for _ in range(3):
            started.append(Worker(config))
        yield config, started
    finally:
        for worker in started:
            worker.stop()


def _eventually(check: Callable[[], bool]) -> bool:
    """True once ``check()`` holds: revocations are read at most every half second (this
    bounds a hang; it measures nothing)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_a_role_removed_refuses_the_next_request_in_each_process(
    three: tuple[Path, list[Worker]],
) -> None:
    config, workers = three
    ana = token()
    wrote = workers[0].client.post(
        "/v1/files/write",
        json={"path": "/docs/plan.md", "content": "# Plan\n\nThe heron count.\n"},
        headers={"Authorization": f"Bearer {ana}"},
    )
    assert wrote.status_code == 201, wrote.text
    sessions = [McpSession(w.client, ana).open() for w in workers]
    for worker, session in zip(workers, sessions, strict=True):
        assert worker.read(ana) == 200
        status, output = session.read("/docs/plan.md")
        assert status == 200 and output is not None and output["success"] is True

    workspace_file(config.parent, roles=("auditor",), index=False)

    for worker, session in zip(workers, sessions, strict=True):
        got = session.read("/docs/plan.md")
        assert got == (404, None), worker.log.read_text()  # its very next request
        assert worker.read(ana) == 404
        assert worker.read(token("ida", roles=("auditor",))) == 200


def test_a_token_revoked_on_the_command_line_is_refused_by_each_process(
    three: tuple[Path, list[Worker]],
) -> None:
    config, workers = three
    kept, dropped = token(jti="kept"), token(jti="dropped")
    sessions = [McpSession(w.client, dropped).open() for w in workers]
    assert all(w.read(kept) == 404 and w.read(dropped) == 404 for w in workers)  # no file yet
    result = CliRunner().invoke(
        main, ["token", "revoke", "--id", "dropped", "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    for worker, session in zip(workers, sessions, strict=True):
        assert _eventually(lambda w=worker: w.read(dropped) == 401)
        assert session.read("/docs/plan.md") == (401, None)
        assert worker.read(kept) == 404

    result = CliRunner().invoke(
        main, ["token", "revoke", "--subject", "ana", "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    for worker in workers:
        assert _eventually(lambda w=worker: w.read(kept) == 401)
