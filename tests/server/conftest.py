"""A labelled workspace served over real HTTP, and tokens for its principals."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from bastion import Labels, LocalStore, MemoryStore, Mount, Policy, Rule
from bastion.core.models import Action
from bastion.core.policy import FileLimits
from bastion.governance.identity import IdentityConfig, VerificationKey
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.server import ServerSettings, create_app
from bastion.workspace import Workspace

from .support import Token, running

ISSUER = "https://id.test"
AUDIENCE = "bastion-api"

DOCS = {
    "handbook.md": "# Handbook\n\nThe kestrel rota starts on Monday.\nPages are answered within 15 minutes.\n",
    "notes/plan.md": "line 1\nline 2\nline 3\nline 4\n",
    "hr/pay.md": (
        "---\ntenant: acme\nclassification: confidential\nroles: [hr]\n---\n"
        "# Pay\n\nThe kestrel bonus is 12 percent.\n"
    ),
}


@pytest.fixture(scope="module")
def secret() -> bytes:
    return secrets.token_bytes(64)


@pytest.fixture(scope="module")
def identity(secret: bytes) -> IdentityConfig:
    return IdentityConfig(
        issuer=ISSUER,
        audience=AUDIENCE,
        keys=(VerificationKey.hmac(secret, algorithm="HS256", kid="k1"),),
    )


@pytest.fixture(scope="module")
def token(secret: bytes) -> Token:
    def make(
        sub: str = "ana",
        *,
        roles: tuple[str, ...] = ("staff",),
        clearance: str = "internal",
        tenant: str = "acme",
        ttl: int = 300,
        **overrides: Any,
    ) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": sub,
            "tenant": tenant,
            "roles": list(roles),
            "clearance": clearance,
            "iat": now,
            "exp": now + ttl,
        }
        claims.update(overrides)
        return jwt.encode(claims, secret, algorithm="HS256", headers={"kid": "k1"})

    return make


def policy() -> Policy:
    everyday = [a for a in Action if a.value in ("read", "write", "delete", "list", "search")]
    return Policy(
        rules=(
            Rule.deny("write", "/docs/locked/**", description="locked folder"),
            Rule.allow(everyday, "/**"),
            Rule.allow(["audit", "reindex"], "/**", roles={"ops"}),
        ),
        limits=FileLimits(max_file_bytes=64 * 1024, blocked_segments=frozenset({".git"})),
    )


def build_workspace(root: Path) -> Workspace:
    for rel, text in DOCS.items():
        target = root / "docs" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / "docs" / "locked").mkdir()
    mounts = [
        Mount.of(
            "/docs",
            LocalStore(root / "docs"),
            "read_write",
            labels=Labels(classification="internal"),
        ),
        Mount.of("/ref", MemoryStore(), "read_only"),
        Mount.of(
            "/secret",
            MemoryStore(),
            "read_write",
            labels=Labels(classification="restricted"),
        ),
    ]
    ws = Workspace(mounts, policy=policy(), knowledge=Knowledge(MemoryIndex()))
    ws.sync().rebuild_index()
    return ws


@pytest.fixture(scope="module")
def served_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder on disk behind ``/docs``: a store path no response may show."""
    return tmp_path_factory.mktemp("served")


@pytest.fixture(scope="module")
def server(served_root: Path, identity: IdentityConfig) -> Iterator[str]:
    ws = build_workspace(served_root)
    (served_root / "docs" / "escape.md").symlink_to("/etc/hostname")
    (served_root / "docs" / "fifo").mkdir()
    os.mkfifo(served_root / "docs" / "fifo" / "pipe.md")
    settings = ServerSettings(max_body_bytes=32 * 1024, max_upload_bytes=48 * 1024)
    with running(create_app(ws, identity=identity, settings=settings)) as url:
        yield url


@pytest.fixture
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as c:
        yield c
