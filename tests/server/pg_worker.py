"""One server process over one PostgreSQL (store and index), for the multi-process tests
and ``bench/serve_load.py``: ``python pg_worker.py DSN PORT`` with the HS256 secret in
``BASTION_TEST_SECRET``. The index is repaired (``reindex``) before it listens."""

from __future__ import annotations

import os
import sys

import uvicorn

from bastion import Mount, Policy
from bastion.governance.identity import IdentityConfig, VerificationKey
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.postgres import PostgresIndex
from bastion.server import create_app
from bastion.server.settings import ServerSettings
from bastion.stores.postgres import PostgresStore
from bastion.workspace import Workspace

ISSUER = "https://id.test"
AUDIENCE = "bastion-api"


def main(dsn: str, port: int) -> None:
    secret = os.environ["BASTION_TEST_SECRET"]
    workspace = Workspace(
        [Mount.of("/docs", PostgresStore(dsn))],
        policy=Policy.allow_all(),
        knowledge=Knowledge(PostgresIndex(dsn)),
    )
    workspace.sync().reindex()
    identity = IdentityConfig(
        issuer=ISSUER, audience=AUDIENCE, keys=(VerificationKey.hmac(secret, kid="k1"),)
    )
    uvicorn.run(
        # Contended compare-and-set retries many times: the per-principal request cap (a
        # separate feature with its own tests) would answer 429 before the store's 409.
        create_app(workspace, identity=identity, settings=ServerSettings(requests_per_minute=None)),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
