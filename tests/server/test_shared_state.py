"""The servers' shared state on both of its databases: SQLite (processes on one machine) and a
real PostgreSQL (processes on several machines): revocations and accounts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.core.errors import ConfigurationError
from bastion.server.accounts import Accounts
from bastion.server.shared import Revoked, SharedState

PASSWORD = "a long enough password"


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> SharedState:
    if request.param == "sqlite":
        return SharedState("state.db", base=tmp_path)
    dsn: str = request.getfixturevalue("pg_dsn")
    return SharedState(dsn)


def test_revocations_are_read_back(shared: SharedState) -> None:
    assert shared.revoked().refuses({"jti": "t1", "sub": "ana", "iat": 1}) == ""
    shared.revoke_token("t1")
    shared.revoke_token("t1")  # twice: still one
    shared.revoke_subject("bo")
    other = SharedState(shared.where, base=None) if shared.describe() == "PostgreSQL" else shared
    revoked = other.revoked()
    assert revoked.tokens == frozenset({"t1"})
    assert revoked.refuses({"jti": "t1", "sub": "x"}) == "token"
    assert revoked.refuses({"sub": "bo", "iat": 0}) == "subject"
    assert revoked.refuses({"sub": "bo"}) == "subject"  # no iat: refused whenever issued
    assert revoked.refuses({"sub": "bo", "iat": revoked.subjects["bo"] + 1}) == ""


def test_accounts_keep_argon2id_hashes_and_one_session_key(shared: SharedState) -> None:
    accounts = Accounts(shared)
    accounts.add("ana", PASSWORD)
    with pytest.raises(ConfigurationError, match="exists"):
        accounts.add("ana", PASSWORD)
    assert accounts.verify("ana", PASSWORD)
    assert not accounts.verify("ana", PASSWORD + "x")
    assert not accounts.verify("zed", PASSWORD)
    (digest,) = shared.execute("SELECT hash FROM bastion_accounts WHERE name = ?", ("ana",))[0]
    assert digest.startswith("$argon2id$")
    accounts.disable("ana")
    assert not accounts.verify("ana", PASSWORD)
    assert "ana" in shared.revoked().subjects
    accounts.passwd("ana", PASSWORD + "!")
    assert accounts.verify("ana", PASSWORD + "!") and not accounts.verify("ana", PASSWORD)
    assert Accounts(shared).session_secret() == accounts.session_secret()
    assert len(accounts.session_secret()) == 32


class _Failing(SharedState):
    """A shared state whose database is gone (our own port, made to fail)."""

    def __init__(self, tmp: Path) -> None:
        super().__init__("state.db", base=tmp)
        self.down = False

    def revoked(self) -> Revoked:
        if self.down:
            from bastion.core.errors import OperationError

            raise OperationError("shared state failed: database is locked")
        return super().revoked()


async def test_an_unreadable_list_is_kept_a_while_then_every_token_is_refused(
    tmp_path: Path,
) -> None:
    from bastion.server.errors import ApiError
    from bastion.server.revocations import REFRESH_SECONDS, STALE_AFTER, Revocations

    now = [100.0]
    shared = _Failing(tmp_path)
    shared.revoke_token("gone")
    revocations = Revocations(shared, clock=lambda: now[0])
    with pytest.raises(ApiError) as unread:
        revocations.check({"sub": "ana"})  # never read yet: fail closed
    assert unread.value.status == 503
    await revocations.refresh()
    revocations.check({"sub": "ana"})
    shared.down = True
    now[0] += REFRESH_SECONDS
    await revocations.refresh()
    revocations.check({"sub": "ana"})  # the last list read still holds
    with pytest.raises(Exception, match="token revoked"):
        revocations.check({"sub": "ana", "jti": "gone"})
    now[0] += STALE_AFTER
    await revocations.refresh()
    with pytest.raises(ApiError) as stale:
        revocations.check({"sub": "ana"})
    assert stale.value.status == 503 and stale.value.code == "revocations_unavailable"
    shared.down = False
    now[0] += REFRESH_SECONDS
    await revocations.refresh()
    revocations.check({"sub": "ana"})
