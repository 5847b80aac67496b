"""Local accounts: Argon2id passwords in the shared state, ``bastion user add|passwd|disable``,
a session cookie (HttpOnly, SameSite=Strict) that acts as the file's ``[users]`` entry, limited
sign-in attempts, and no cross-site changes on a cookie."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bastion.cli import main
from bastion.server.loading import ServerFile, opened_app

from .reload_support import SECRET, rewrite, workspace_file
from .support import running

ENV = {"BASTION_TEST_SECRET": SECRET}
PASSWORD = "correct horse battery staple"
USERS = '\n[users.ana]\ntenant = "acme"\nroles = ["analyst"]\nclearance = "internal"\n'


def _cli(config: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner(env=ENV).invoke(main, [*args, "--config", str(config)], input=stdin)
    return result.exit_code, result.output


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    config = workspace_file(tmp_path, index=False)
    rewrite(config, config.read_text() + USERS)
    code, out = _cli(config, "user", "add", "ana", "--password-stdin", stdin=PASSWORD + "\n")
    assert code == 0, out
    with opened_app(ServerFile.read(config, env=ENV)) as app, running(app) as url:
        yield config, url


def _login(url: str, user: str = "ana", password: str = PASSWORD) -> httpx.Response:
    return httpx.post(f"{url}/v1/auth/login", json={"user": user, "password": password})


def _signed_in(url: str) -> httpx.Client:
    r = _login(url)
    assert r.status_code == 200, r.text
    client = httpx.Client(base_url=url, timeout=30)
    client.cookies.set("bastion_session", r.cookies["bastion_session"])
    return client


def _eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 10  # bounds a hang; revocations are read every 0.5 s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_the_password_is_kept_only_as_an_argon2id_hash(site: tuple[Path, str]) -> None:
    config, _ = site
    with sqlite3.connect(config.parent / ".bastion" / "server.db") as db:
        (digest,) = db.execute("SELECT hash FROM bastion_accounts WHERE name = 'ana'").fetchone()
    assert digest.startswith("$argon2id$") and PASSWORD not in digest


def test_a_session_cookie_acts_as_the_users_entry(site: tuple[Path, str]) -> None:
    _, url = site
    r = _login(url)
    assert r.status_code == 200 and r.json() == {"user": "ana"}
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert "secure" not in cookie  # served over plain HTTP here
    with _signed_in(url) as client:
        me = client.get("/v1/me").json()
        assert me["id"] == "ana" and me["roles"] == ["analyst"]


def test_a_wrong_password_and_an_unknown_name_are_told_the_same(site: tuple[Path, str]) -> None:
    _, url = site
    wrong, unknown = _login(url, password="not the password"), _login(url, user="zed")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    assert "set-cookie" not in wrong.headers


def test_failed_attempts_are_limited_per_name(site: tuple[Path, str]) -> None:
    _, url = site
    for _ in range(5):
        assert _login(url, password="guess guess guess").status_code == 401
    limited = _login(url)  # even the right password, until the window passes
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "too_many_attempts"


def test_a_change_on_a_cookie_needs_this_servers_page(site: tuple[Path, str]) -> None:
    _, url = site
    body = {"path": "/docs/n.md", "content": "x"}
    with _signed_in(url) as client:
        bare = client.post("/v1/files/write", json=body)
        assert bare.status_code == 401
        other = client.post("/v1/files/write", json=body, headers={"Origin": "https://evil.test"})
        assert other.status_code == 403
        own = client.post("/v1/files/write", json=body, headers={"Origin": url})
        assert own.status_code == 201, own.text


def test_disable_passwd_and_logout_end_sessions(site: tuple[Path, str]) -> None:
    config, url = site
    first = _signed_in(url)
    code, out = _cli(config, "user", "disable", "ana")
    assert code == 0, out
    assert _eventually(lambda: first.get("/v1/me").status_code == 401)
    assert _login(url).status_code == 401
    code, out = _cli(config, "user", "passwd", "ana", "--password-stdin", stdin=PASSWORD + "!\n")
    assert code == 0, out
    assert first.get("/v1/me").status_code == 401
    assert _login(url, password=PASSWORD + "!").status_code == 200
    with httpx.Client(base_url=url) as second:
        r = _login(url, password=PASSWORD + "!")
        second.cookies.set("bastion_session", r.cookies["bastion_session"])
        assert second.get("/v1/me").status_code == 200
        out_ = second.post("/v1/auth/logout", headers={"Origin": url})
        assert out_.status_code == 200
        second.cookies.set("bastion_session", r.cookies["bastion_session"])  # kept by a thief
        assert _eventually(lambda: second.get("/v1/me").status_code == 401)
    first.close()


def test_a_role_taken_from_the_users_entry_applies_to_the_next_request(
    site: tuple[Path, str],
) -> None:
    config, url = site
    with _signed_in(url) as client:
        origin = {"Origin": url}
        assert (
            client.post(
                "/v1/files/write", json={"path": "/docs/a.md", "content": "x"}, headers=origin
            ).status_code
            == 201
        )
        rewrite(config, config.read_text().replace('roles = ["analyst"]\nclearance', "clearance"))
        assert client.get("/v1/files/read", params={"path": "/docs/a.md"}).status_code == 404


def test_an_account_needs_an_entry_in_users(tmp_path: Path) -> None:
    config = workspace_file(tmp_path, index=False)
    code, out = _cli(config, "user", "add", "zed", "--password-stdin", stdin=PASSWORD + "\n")
    assert code != 0 and "not in the workspace's [users]" in out


def test_a_short_password_is_refused(tmp_path: Path) -> None:
    config = workspace_file(tmp_path, index=False)
    rewrite(config, config.read_text() + USERS)
    code, out = _cli(config, "user", "add", "ana", "--password-stdin", stdin="short\n")
    assert code != 0 and "a password has 12 to 1024 characters" in out


def test_login_and_logout_answer_in_their_declared_shapes(site: tuple[Path, str]) -> None:
    from bastion.server.openapi import all_endpoints

    _, url = site
    declared = {(e.method, e.path): e for e in all_endpoints()}
    r = _login(url)
    login = declared[("POST", "/v1/auth/login")]
    assert r.status_code == login.status
    login.operation.result.model_validate(r.json())
    with httpx.Client(base_url=url) as client:
        client.cookies.set("bastion_session", r.cookies["bastion_session"])
        out = client.post("/v1/auth/logout", headers={"Origin": url})
        logout = declared[("POST", "/v1/auth/logout")]
        assert out.status_code == logout.status
        logout.operation.result.model_validate(out.json())
        assert (
            "bastion_session" not in client.cookies
            or "max-age=0" in out.headers["set-cookie"].lower()
        )
