"""A store that does not answer: 503 naming the mount, readiness down, the rest still served."""

from __future__ import annotations

import asyncio
import secrets
import time

import httpx
import jwt

from bastion import MemoryStore, Mount, Policy, VPath
from bastion.core.models import FileInfo
from bastion.governance.identity import IdentityConfig, VerificationKey
from bastion.server import create_app
from bastion.workspace import Workspace

from .support import auth, running


class StalledStore(MemoryStore):
    """A memory store whose every stat hangs (a backend that stopped answering)."""

    async def stat(self, path: VPath) -> FileInfo:
        await asyncio.sleep(60)
        return await super().stat(path)


def test_a_stalled_mount_is_a_503_that_names_it() -> None:
    secret = secrets.token_bytes(32)
    identity = IdentityConfig(issuer="i", audience="a", keys=(VerificationKey.hmac(secret),))
    ws = Workspace(
        [
            Mount.of("/fine", MemoryStore()),
            Mount.of("/stalled", StalledStore(), timeout=0.2),
        ],
        policy=Policy.allow_all(),
    )
    claims = {"iss": "i", "aud": "a", "sub": "ana", "tenant": "t", "exp": int(time.time()) + 60}
    headers = auth(jwt.encode(claims, secret, algorithm="HS256"))
    with running(create_app(ws, identity=identity)) as url, httpx.Client(base_url=url) as c:
        r = c.get("/v1/files/stat", params={"path": "/stalled/a.md"}, headers=headers)
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "store_unavailable"
        assert "/stalled" in r.json()["error"]["message"]
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json() == {
            "status": "unavailable",
            "mounts_down": 1,
        }
        wrote = c.post(
            "/v1/files/write", json={"path": "/fine/a.md", "content": "x"}, headers=headers
        )
        assert wrote.status_code == 201
