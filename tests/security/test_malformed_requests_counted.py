"""A request refused for its malformed path is still audited and still counts against the rate
limit, so probing traversal spellings is neither invisible nor free.

Bugs found by the security suite (once ``test_found_bugs.py``); each test's docstring says what
went wrong.
"""

from __future__ import annotations

import pytest
from security_stores import caught

import bastion.workspace.shared as shared_module
from bastion.core.errors import InvalidPathError, RateLimitError
from bastion.core.mounts import Mount
from bastion.core.policy import Policy, RateLimit
from bastion.core.ratelimit import RateLimiter
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

# -- audit and rate limit of malformed requests ----------------------------------------------


async def test_traversal_attempts_are_audited() -> None:
    """Paths are parsed before the operation opens, so ``read_text('/docs/../../etc/passwd')``
    and friends leave no audit record at all: the attempts a security team most wants to see
    are invisible."""
    ws = Workspace([Mount.of("/docs", MemoryStore())], policy=Policy.allow_all())
    for raw in ("/docs/../../etc/passwd", "/docs/a\x00b", "C:\\Windows\\win.ini"):
        count = len(ws.audit.records)
        assert isinstance(await caught(ws.read_text(raw)), InvalidPathError)
        new = ws.audit.records[count:]
        assert len(new) == 1, f"{raw!r}: {len(new)} audit records"
        assert new[0].allowed is False and new[0].reason


async def test_malformed_requests_count_against_the_rate_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refused requests count (docs/policy.md), but a request refused for its path is refused
    before the limiter sees it: an agent can probe traversal spellings without limit."""
    monkeypatch.setattr(
        shared_module, "RateLimiter", lambda limit: RateLimiter(limit, clock=lambda: 0.0)
    )
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(rate_limit=RateLimit(5, 60)),
    )
    for i in range(5):
        assert isinstance(await caught(ws.read_text(f"/docs/{'../' * (i + 2)}x")), InvalidPathError)
    assert isinstance(await caught(ws.read_text("/docs/x")), RateLimitError)
