"""One server process started from a workspace file, as ``bastion serve`` starts it, for the
tests of reloads and revocations across processes: ``python toml_worker.py FILE PORT`` (the
HS256 secret in ``BASTION_TEST_SECRET``, read by the file's ``secret_env``)."""

from __future__ import annotations

import sys

import uvicorn

from bastion.server.loading import ServerFile, opened_app


def main(path: str, port: int) -> None:
    with opened_app(ServerFile.read(path)) as app:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
