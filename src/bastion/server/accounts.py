"""Local accounts for a small team: a name and a password, kept in the servers' shared state.

A password is stored only as its Argon2id hash (argon2-cffi's defaults, RFC 9106's
low-memory profile: 64 MiB, 3 passes, 4 lanes); checking one costs tens of milliseconds and
runs off the event loop. Who an account *is* (tenant, roles, clearance) is not kept here: it is
the workspace file's ``[users]`` entry of the same name, so a role taken out of the file
applies to the account's next request like any other access change.

``bastion user add|passwd|disable`` (:mod:`bastion.cli.admin`) change accounts; changing a
password or disabling an account revokes every session of that name issued until then.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from bastion.core.errors import ConfigurationError, OperationError
from bastion.core.principal import is_plain_name

if TYPE_CHECKING:
    from bastion.server.shared import SharedState

__all__ = ["MAX_PASSWORD", "MIN_PASSWORD", "Accounts"]

MIN_PASSWORD = 12
MAX_PASSWORD = 1024
"""Longer input is refused before it is hashed (hashing is deliberately costly)."""
_MAX_NAME = 128


class Accounts:
    """The accounts of one shared state."""

    def __init__(self, shared: SharedState) -> None:
        from argon2 import PasswordHasher

        self.shared = shared
        self._hasher = PasswordHasher()
        self._dummy = self._hasher.hash(secrets.token_hex(16))
        """Checked against when the name is unknown, so that an unknown name and a wrong
        password take the same time."""

    # -- changes (the operator) --------------------------------------------------------------

    def add(self, name: str, password: str) -> None:
        _check_name(name)
        digest = self._hasher.hash(_checked_password(password))
        if self.shared.execute("SELECT 1 FROM bastion_accounts WHERE name = ?", (name,)):
            raise ConfigurationError(f"account {name} exists: use bastion user passwd")
        self.shared.execute(
            "INSERT INTO bastion_accounts (name, hash, disabled, changed_at) VALUES (?, ?, 0, ?)",
            (name, digest, time.time()),
        )

    def passwd(self, name: str, password: str) -> None:
        """A new password; the account is enabled again and its sessions so far revoked."""
        digest = self._hasher.hash(_checked_password(password))
        self._change(name, digest, disabled=False)

    def disable(self, name: str) -> None:
        """No more sign-ins; its sessions so far revoked (``passwd`` enables it again)."""
        self._change(name, None, disabled=True)

    def _change(self, name: str, digest: str | None, *, disabled: bool) -> None:
        _check_name(name)
        found = self.shared.execute("SELECT hash FROM bastion_accounts WHERE name = ?", (name,))
        if not found:
            raise ConfigurationError(f"no account {name}: use bastion user add")
        self.shared.execute(
            "UPDATE bastion_accounts SET hash = ?, disabled = ?, changed_at = ? WHERE name = ?",
            (digest or found[0][0], int(disabled), time.time(), name),
        )
        self.shared.revoke_subject(name)

    # -- signing in (the server; blocking: call it in a worker thread) -----------------------

    def verify(self, name: str, password: str) -> bool:
        """True when ``name`` is an enabled account and ``password`` its password."""
        from argon2.exceptions import InvalidHashError, VerificationError

        if not _plain(name) or not 0 < len(password) <= MAX_PASSWORD:
            return False
        rows = self.shared.execute(
            "SELECT hash, disabled FROM bastion_accounts WHERE name = ?", (name,)
        )
        digest, disabled = (rows[0][0], bool(rows[0][1])) if rows else (self._dummy, True)
        try:
            self._hasher.verify(digest, password)
        except (VerificationError, InvalidHashError):
            return False
        if disabled:
            return False
        if self._hasher.check_needs_rehash(digest):
            self.shared.execute(
                "UPDATE bastion_accounts SET hash = ? WHERE name = ?",
                (self._hasher.hash(password), name),
            )
        return True

    def session_secret(self) -> bytes:
        """The key session cookies are signed with: made once, shared by every process."""
        rows = self.shared.execute("SELECT value FROM bastion_secrets WHERE name = 'session'", ())
        if not rows:
            self.shared.execute(
                "INSERT INTO bastion_secrets (name, value) VALUES ('session', ?) "
                "ON CONFLICT (name) DO NOTHING",
                (secrets.token_hex(32),),
            )
            rows = self.shared.execute(
                "SELECT value FROM bastion_secrets WHERE name = 'session'", ()
            )
        if not rows:
            raise OperationError("the session key could not be stored in the shared state")
        return bytes.fromhex(rows[0][0])


def _plain(name: str) -> bool:
    return 0 < len(name) <= _MAX_NAME and is_plain_name(name) and " " not in name


def _check_name(name: str) -> None:
    if not _plain(name):
        raise ConfigurationError(
            f"an account name is 1 to {_MAX_NAME} printable characters without spaces"
        )


def _checked_password(password: str) -> str:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise ConfigurationError(f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    return password
