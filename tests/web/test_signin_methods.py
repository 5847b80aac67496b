"""Signing in as people do, in Chromium, on a server configured from a workspace file: through
an OpenID Connect provider (a real one on loopback, oidc-provider-mock) and with a local account
(Argon2id); who is signed in (tenant, roles, clearance); signing out; and a session that ends
mid-way returning the page to sign-in with a message."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, expect

from bastion.cli import main
from bastion.server.loading import ServerFile, opened_app
from server.oidc_support import CLIENT_ID, provider
from server.reload_support import rewrite
from server.support import running

from .people import Shots, Visit, launched, serious_violations, visiting

PASSWORD = "correct horse battery staple"
SECRET = {"OIDC_CLIENT_SECRET": "the-client-secret"}
PEOPLE = {"bo": {"tenant": "acme", "roles": ["analyst"], "clearance": "internal"}}


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Browser]:
    yield from launched()


@pytest.fixture
def visits(chromium_browser: Browser) -> Iterator[Callable[..., Visit]]:
    yield from visiting(chromium_browser)


def _file(folder: Path, issuer: str) -> Path:
    path = folder / "bastion.toml"
    rewrite(
        path,
        f"""
[knowledge]
folder = "index"
embedder = "none"

[[mounts]]
prefix = "/docs"
url = "sqlite:docs.db"
labels = {{ tenant = "acme", classification = "internal" }}

[[policy.rules]]
effect = "allow"
actions = ["read", "list", "search", "write"]
paths = ["/**"]
roles = ["analyst"]

[users.ana]
tenant = "acme"
roles = ["analyst"]
clearance = "internal"

[identity]
issuer = "{issuer}"
audience = "{CLIENT_ID}"
discovery = true
client_id = "{CLIENT_ID}"
client_secret_env = "OIDC_CLIENT_SECRET"
""",
    )
    return path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Per test: the provider silences its library's warnings for the test that starts it."""
    folder = tmp_path / "site"
    folder.mkdir()
    with provider(PEOPLE) as issuer:
        config = _file(folder, issuer)
        added = CliRunner(env=SECRET).invoke(
            main,
            ["user", "add", "ana", "--password-stdin", "--config", str(config)],
            input=PASSWORD + "\n",
        )
        assert added.exit_code == 0, added.output
        with opened_app(ServerFile.read(config, env=SECRET)) as app, running(app) as url:
            yield issuer, url


def test_the_page_offers_this_servers_methods_and_says_where_a_token_comes_from(
    served: tuple[str, str], visits: Callable[..., Visit], tmp_path: Path
) -> None:
    _, site = served
    page = visits(site).page
    page.goto(site)
    expect(page.locator("#oidc-sign-in")).to_be_visible()
    expect(page.locator("#account-form")).to_be_visible()
    expect(page.locator("#demo-form")).to_be_hidden()
    page.locator("#token-method summary").click()
    expect(page.locator("#token-hint")).to_contain_text("identity provider this server trusts")
    expect(page.locator("#token")).to_have_attribute("aria-describedby", "token-hint")
    Shots(tmp_path).take(page, "signin", doc=True)
    assert serious_violations(page) == []
    # a token that is not one: refused in one line, and still on the sign-in page
    page.locator("#token").fill("not-a-token")
    page.locator("#token-form button").click()
    expect(page.locator("#signin-error")).not_to_be_empty()
    expect(page.locator("#app")).to_be_hidden()


def test_sign_in_through_the_identity_provider(
    served: tuple[str, str], visits: Callable[..., Visit]
) -> None:
    issuer, site = served
    page = visits(site, None, issuer).page
    page.goto(site)
    page.get_by_role("link", name="Sign in with your identity provider").click()
    page.wait_for_url(f"{issuer}/**")
    page.locator('input[name="sub"]').fill("bo")
    page.get_by_role("button", name="Authorize").click()
    who = page.locator("#whoami")
    expect(who).to_contain_text("Signed in as bo")
    expect(who).to_contain_text("tenant acme")
    expect(who).to_contain_text("roles analyst")
    expect(who).to_contain_text("clearance internal")
    assert page.url.startswith(site)
    page.locator("#signout").click()
    expect(page.locator("#signin")).to_be_visible()
    page.reload()  # the session cookie was revoked: the page stays signed out
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()


def test_a_local_account_and_a_session_that_ends_midway(
    served: tuple[str, str], visits: Callable[..., Visit], tmp_path: Path
) -> None:
    _, site = served
    folder = tmp_path / "site"
    page = visits(site).page
    page.goto(site)
    page.locator("#account-user").fill("ana")
    page.locator("#account-password").fill("wrong password")
    page.locator("#account-password").press("Enter")
    expect(page.locator("#signin-error")).to_contain_text("wrong name or password")
    page.locator("#account-password").fill(PASSWORD)
    page.locator("#account-password").press("Enter")
    expect(page.locator("#whoami")).to_contain_text("Signed in as ana")
    expect(page.locator("#whoami")).to_contain_text("roles analyst")
    expect(page.locator("#question")).to_be_focused()
    page.reload()  # the cookie keeps the session across a reload
    expect(page.locator("#whoami")).to_contain_text("Signed in as ana")
    # what ana asks is kept in her area, a folder beside the workspace file
    page.locator("#question").fill("Where is the plan?")
    page.locator("#question").press("Enter")
    expect(page.locator("#turns .verdict")).not_to_be_empty(timeout=15_000)
    kept = list((folder / ".bastion" / "conversations" / "people").glob("*/conversations/*.json"))
    assert len(kept) == 1 and "Where is the plan?" in kept[0].read_text()

    # The session is ended elsewhere (the same cookie signs out from another client).
    cookie = next(c for c in page.context.cookies() if c["name"] == "bastion_session")
    jar = {"bastion_session": cookie["value"]}
    ended = httpx.post(f"{site}/v1/auth/logout", cookies=jar, headers={"Origin": site})
    assert ended.status_code == 200, ended.text
    deadline = time.monotonic() + 10  # revocations are read twice a second
    while httpx.get(f"{site}/v1/me", cookies=jar).status_code != 401:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    page.locator("#question").fill("And the budget?")
    page.locator("#question").press("Enter")
    expect(page.locator("#signin-note")).to_contain_text("Your session has ended")
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()
    expect(page.locator("#whoami")).to_be_empty()
    Shots(tmp_path).take(page, "signin-expired", doc=True)
