"""Workspace-level security regressions: hostile paths, mount confusion, scope and policy
bypasses, and leaks of what a principal may not see (content, names, counts, messages).

Each test builds a small workspace, seeds protected content straight into the underlying
store (bypassing the guard), attacks it through the public ``Workspace`` API and asserts both
what the caller sees and what the stores still hold. Attacks that do not depend on the backend
run over every store adapter (``memory`` and, when present, ``local``).

Bugs found while writing this suite are pinned by behaviour in ``test_guard_answers.py``,
``test_policy_unicode_spellings.py``, ``test_limits_not_bypassed.py`` and
``test_malformed_requests_counted.py``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from security_stores import STORE_KINDS, new_store, seed, snapshot

from bastion.core.audit import MemoryAuditSink
from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    InvalidPathError,
    InvalidPatternError,
    IsADirectoryError_,
    LimitError,
    NoMountError,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    ScopeError,
)
from bastion.core.models import Labels
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.ports import Store
from bastion.core.principal import Principal, RoleGraph
from bastion.stores.local import LocalStore
from bastion.workspace import Workspace

# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(store_kind: str, tmp_path: Path) -> Callable[[str], Store]:
    return lambda name: new_store(store_kind, tmp_path, name)


def host_tree(root: Path) -> dict[str, bytes | None]:
    """Everything on the host disk under ``root`` (for the local store: proves no escape)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


async def raises(exc_type: type[BaseException] | tuple[type[BaseException], ...], aw: Any) -> Any:
    with pytest.raises(exc_type) as info:
        await aw
    return info.value


# Anything that may reveal a protected entry of the vault below. Visible names and content
# never contain these words.
_LEAK = re.compile(
    r"TOPSECRET|secret|plan\.txt|more\.txt|\.key\b|/\.git(?![\w.-])|\bconfig\b|\bHEAD\b"
    r"|/conf\b|/hr\b|/acme\b",
    re.IGNORECASE,
)
# Words that would tell the caller why something is hidden.
_REASON_WORDS = ("deny", "denied", "rule", "blocked", "label", "clearance", "policy", "hidden")


def assert_no_leak(*things: object) -> None:
    text = "\n".join(repr(t) + "\n" + str(t) for t in things)
    found = _LEAK.search(text)
    assert found is None, f"leaked {found.group(0)!r} in: {text[:500]}"


def assert_plain_not_found(exc: BaseException) -> None:
    """A hidden entry is reported as not found: no content, no reason.

    Under a mount the principal may not see at all, "no such mount" is as good as "no such
    file", as long as the list of mounts it offers does not name the hidden one.
    """
    assert isinstance(exc, NotFoundError | NoMountError), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    if isinstance(exc, NoMountError):
        assert "not under any mount" in message
        assert_no_leak(message.partition("mounted:")[2])
    else:
        assert "not found" in message
    assert "TOPSECRET" not in message
    for word in _REASON_WORDS:
        assert word not in message.lower(), f"{word!r} in {message!r}"


async def not_found(aw: Awaitable[Any]) -> BaseException:
    """Await ``aw``, expecting the plain not-found refusal of :func:`assert_plain_not_found`."""
    exc = await raises((NotFoundError, NoMountError), aw)
    assert_plain_not_found(exc)
    return exc  # type: ignore[no-any-return]


# -- the vault: one workspace full of things the agent may not see ---------------------------

AGENT = Principal.of("agent", roles={"engineer"}, clearance="internal")

VAULT_POLICY = Policy(
    rules=(
        Rule.deny("*", "/docs/secret/**"),
        Rule.deny("*", "/docs/*.key"),
        Rule.allow("*", "/**"),
    ),
    limits=FileLimits(max_file_bytes=4096, blocked_segments=frozenset({".git"})),
)

DOCS_FILES: dict[str, str | bytes] = {
    "/pub.txt": "public needle line\n",
    "/notes.md": "visible needle\nsecond line\n",
    "/.gitignore": "*.pyc\n",
    "/big.log": "x" * 5000,
    "/sub/ok.md": "needle in sub\n",
    "/secret/plan.txt": "needle TOPSECRET plan\n",
    "/secret/deep/more.txt": "TOPSECRET deep needle\n",
    "/secret/huge.log": "TOPSECRET needle " * 500,
    "/secret/blob.bin": b"\x00TOPSECRET needle",
    "/api.key": "TOPSECRET key needle\n",
    "/.git/config": "TOPSECRET git needle\n",
    "/sub/.git/HEAD": "TOPSECRET head needle\n",
}

VISIBLE = {
    "/docs",
    "/docs/.gitignore",
    "/docs/big.log",
    "/docs/notes.md",
    "/docs/pub.txt",
    "/docs/sub",
    "/docs/sub/ok.md",
    "/internal",
    "/internal/i.txt",
    "/other",
    "/other/o.txt",
}

HIDDEN_PATHS = [
    "/docs/secret",
    "/docs/secret/plan.txt",
    "/docs/secret/deep",
    "/docs/secret/deep/more.txt",
    "/docs/secret/huge.log",
    "/docs/api.key",
    "/docs/.git",
    "/docs/.git/config",
    "/docs/.GIT/config",
    "/docs/sub/.git/HEAD",
    "/other/.git/x",
    "/conf",
    "/conf/c.txt",
    "/hr",
    "/hr/h.txt",
    "/acme",
    "/acme/a.txt",
]


@dataclass
class Vault:
    ws: Workspace
    stores: dict[str, Store]
    sink: MemoryAuditSink
    """The shared audit log, as an operator reads it (true reasons)."""

    async def snapshots(self) -> dict[str, dict[str, bytes | None]]:
        return {name: await snapshot(store) for name, store in self.stores.items()}


@pytest.fixture
async def vault(make_store: Callable[[str], Store]) -> Vault:
    stores = {n: make_store(n) for n in ("docs", "other", "conf", "hr", "acme", "internal")}
    await seed(stores["docs"], DOCS_FILES)
    await seed(stores["other"], {"/o.txt": "other needle\n", "/.git/x": "TOPSECRET needle"})
    await seed(stores["conf"], {"/c.txt": "TOPSECRET conf needle\n"})
    await seed(stores["hr"], {"/h.txt": "TOPSECRET hr needle\n"})
    await seed(stores["acme"], {"/a.txt": "TOPSECRET acme needle\n"})
    await seed(stores["internal"], {"/i.txt": "internal needle\n"})
    ws = Workspace(
        [
            Mount.of("/docs", stores["docs"]),
            Mount.of("/other", stores["other"]),
            Mount.of("/conf", stores["conf"], labels=Labels(classification="confidential")),
            Mount.of("/hr", stores["hr"], labels=Labels(roles=frozenset({"hr"}))),
            Mount.of("/acme", stores["acme"], labels=Labels(tenant="acme")),
            Mount.of("/internal", stores["internal"], labels=Labels(classification="internal")),
        ],
        policy=VAULT_POLICY,
        principal=AGENT,
        audit=(sink := MemoryAuditSink()),
    )
    return Vault(ws, stores, sink)


# == 1. path traversal =======================================================================

TRAVERSALS = [
    "..",
    "/..",
    "../x",
    "/../x",
    "../../../../etc/passwd",
    "/docs/../../etc/passwd",
    "/docs/./../..",
    "/docs/./../../x",
    "docs/../../x",
    "/docs/..//../x",
    "/docs/a/../../../x",
    "/docs/a/b/c/../../../../../x",
    "/docs/" + "../" * 50 + "etc/passwd",
    "/docs/" + "../" * 1000 + "etc/passwd",
    "/docs/" + "../" * 5000,
    "/" + "a/" * 1000 + "../" * 1001 + "etc",
    "/docs/pub.txt/../../../x",
    "/./../x",
]

_PATH_OPS: dict[str, Callable[[Workspace, str], Awaitable[Any]]] = {
    "read_text": lambda ws, p: ws.read_text(p),
    "read_bytes": lambda ws, p: ws.read_bytes(p, start=0, end=10),
    "read_lines": lambda ws, p: ws.read_text(p, offset=1, limit=1),
    "write": lambda ws, p: ws.write(p, "pwned"),
    "write_create": lambda ws, p: ws.write(p, "pwned", mode="create"),
    "append": lambda ws, p: ws.append(p, "pwned"),
    "edit": lambda ws, p: ws.edit(p, "public", "pwned"),
    "stat": lambda ws, p: ws.stat(p),
    "exists": lambda ws, p: ws.exists(p),
    "list": lambda ws, p: ws.list(p, recursive=True),
    "mkdir": lambda ws, p: ws.mkdir(p),
    "delete": lambda ws, p: ws.delete(p, recursive=True),
    "grep": lambda ws, p: ws.grep("needle", p),
    "glob": lambda ws, p: ws.glob("**", path=p),
    "move_from": lambda ws, p: ws.move(p, "/docs/moved.txt"),
    "move_to": lambda ws, p: ws.move("/docs/pub.txt", p),
    "copy_from": lambda ws, p: ws.copy(p, "/docs/copied.txt"),
    "copy_to": lambda ws, p: ws.copy("/docs/pub.txt", p),
}


async def _assert_every_op_refuses_path(vault: Vault, raw: str, tmp_path: Path) -> None:
    before, host_before = await vault.snapshots(), host_tree(tmp_path)
    for name, op in _PATH_OPS.items():
        with pytest.raises(InvalidPathError) as info:
            await op(vault.ws, raw)
        message = str(info.value)
        assert "\n" not in message, name
        assert len(message) < 300, f"{name}: message echoes the whole input"
    assert await vault.snapshots() == before
    assert host_tree(tmp_path) == host_before
    # the blocking facade parses the same way
    with pytest.raises(InvalidPathError):
        vault.ws.sync().read_text(raw)


@pytest.mark.parametrize("raw", TRAVERSALS, ids=lambda s: s[:40])
async def test_traversal_above_root_is_refused_by_every_operation(
    vault: Vault, raw: str, tmp_path: Path
) -> None:
    await _assert_every_op_refuses_path(vault, raw, tmp_path)


def test_traversal_error_says_it_climbs_above_root() -> None:
    with pytest.raises(InvalidPathError, match=r"climbs above '/'"):
        VPath.parse("/docs/../../etc/passwd")
    with pytest.raises(InvalidPathError, match=r"climbs above '/'"):
        VPath.parse("/docs/./../..")


@pytest.mark.parametrize(
    "raw",
    [
        "/docs/pub/../secret/plan.txt",
        "/docs/./secret/plan.txt",
        "/docs//secret//plan.txt",
        "///docs/secret/plan.txt",
        "/docs/secret/./plan.txt",
        "/docs/secret/plan.txt/",
        "docs/secret/plan.txt",
        "/docs/secret/deep/../plan.txt",
        "/docs/x/y/../../secret/plan.txt",
        "/other/../docs/secret/plan.txt",
        "/docs/sub/../secret/plan.txt",
        "/docs/" + "a/" * 100 + "../" * 100 + "secret/plan.txt",
    ],
)
async def test_spellings_that_resolve_into_a_denied_dir_are_still_denied(
    vault: Vault, raw: str
) -> None:
    ws = vault.ws
    await not_found(ws.read_text(raw))
    await not_found(ws.stat(raw))
    assert not await ws.exists(raw)
    await not_found(ws.copy(raw, "/other/stolen.txt"))
    await raises(PolicyDeniedError, ws.write(raw, "overwritten"))
    await raises((NotFoundError, PolicyDeniedError), ws.delete(raw))
    assert await vault.stores["docs"].read_all(VPath.parse("/secret/plan.txt")) == (
        b"needle TOPSECRET plan\n"
    )
    assert not await vault.stores["other"].exists(VPath.parse("/stolen.txt"))


@pytest.mark.parametrize(
    "raw",
    [
        "/docs/sub/../.git/config",
        "/docs/./.git/config",
        "/docs/.GIT/config",
        "/docs/.Git/config",
        "/docs/sub/.gIt/HEAD",
        "/docs/sub/./.git/../.git/HEAD",
    ],
)
async def test_spellings_of_a_blocked_segment_stay_blocked(vault: Vault, raw: str) -> None:
    ws = vault.ws
    await not_found(ws.read_text(raw))
    assert not await ws.exists(raw)
    await raises(LimitError, ws.write(raw, "overwritten"))
    await raises(LimitError, ws.mkdir(raw))
    assert await vault.stores["docs"].read_all(VPath.parse("/.git/config")) == (
        b"TOPSECRET git needle\n"
    )


async def test_dotdot_that_stays_inside_resolves_lexically_to_the_right_mount(
    make_store: Callable[[str], Store], tmp_path: Path
) -> None:
    docs, other = make_store("docs"), make_store("other")
    ws = Workspace([Mount.of("/docs", docs), Mount.of("/other", other)], policy=Policy.allow_all())
    await ws.write("/docs/../other/x.txt", "lands in other")
    await ws.write("/docs/a/b/../../y.txt", "lands in docs")
    await ws.write("/docs/" + "d/" * 100 + "../" * 100 + "z.txt", "deep but inside")
    assert await snapshot(other) == {"/x.txt": b"lands in other"}
    assert await snapshot(docs) == {"/y.txt": b"lands in docs", "/z.txt": b"deep but inside"}
    assert await ws.read_text("/other/../docs/./y.txt") == "lands in docs"
    assert [k for k in host_tree(tmp_path) if not k.startswith("stores")] == []


@pytest.mark.parametrize(
    "name",
    [
        "%2e%2e",
        "%2E%2E",
        ".%2e",
        "%2e.",
        "%252e%252e",
        "..%2f..%2fetc%2fpasswd",
        "..%5c..%5cwindows",
        "%c0%ae%c0%ae",
        "%u002e%u002e",
        "...",
        "....",
        ". .",
        ".. ",
        " ..",
        "..test",
        "report..final.md",
    ],
)
async def test_encoded_and_dotty_names_are_literal_names_inside_the_mount(
    make_store: Callable[[str], Store], tmp_path: Path, name: str
) -> None:
    docs, other = make_store("docs"), make_store("other")
    await seed(other, {"/keep.txt": "untouched"})
    ws = Workspace([Mount.of("/docs", docs), Mount.of("/other", other)], policy=Policy.allow_all())
    target = f"/docs/{name}/{name}/other/keep.txt"
    info = await ws.write(target, "literal")
    assert str(info.path) == target
    assert VPath.parse(target).parts == ("docs", name, name, "other", "keep.txt")
    # the bytes are in the docs store, under the literal names, and nowhere else
    assert await docs.read_all(VPath((name, name, "other", "keep.txt"))) == b"literal"
    assert await snapshot(other) == {"/keep.txt": b"untouched"}
    assert [str(e.path) for e in await ws.list("/docs")] == [f"/docs/{name}"]
    assert await ws.read_text(target) == "literal"
    if isinstance(docs, LocalStore):
        escaped = [k for k in host_tree(tmp_path) if not k.startswith("stores")]
        assert escaped == []
        assert (tmp_path / "stores" / "docs" / name / name / "other" / "keep.txt").is_file()


@pytest.mark.parametrize(
    "dots",
    [
        "\u2024\u2024",  # ONE DOT LEADER x2
        "\uff0e\uff0e",  # FULLWIDTH FULL STOP x2
        "\u2025",  # TWO DOT LEADER
        "\ufe52\ufe52",  # SMALL FULL STOP x2
        "\u2024",
        "\uff0e",
        "\u3002\u3002",  # IDEOGRAPHIC FULL STOP x2
    ],
)
async def test_unicode_lookalike_dots_are_ordinary_characters(
    make_store: Callable[[str], Store], tmp_path: Path, dots: str
) -> None:
    docs, other = make_store("docs"), make_store("other")
    ws = Workspace([Mount.of("/docs", docs), Mount.of("/other", other)], policy=Policy.allow_all())
    raw = f"/docs/{dots}/{dots}/{dots}/other/x.txt"
    parsed = VPath.parse(raw)
    assert parsed.parts == ("docs", dots, dots, dots, "other", "x.txt")
    await ws.write(raw, "inside")
    assert await docs.read_all(VPath((dots, dots, dots, "other", "x.txt"))) == b"inside"
    assert await snapshot(other) == {}
    # a lookalike of ".." is never resolved as one
    await ws.write(f"/docs/sub/{dots}/y.txt", "still in sub")
    assert await ws.read_text(f"/docs/sub/{dots}/y.txt") == "still in sub"
    assert not await ws.exists("/docs/y.txt")
    if isinstance(docs, LocalStore):
        assert [k for k in host_tree(tmp_path) if not k.startswith("stores")] == []


async def test_nfc_and_nfd_spellings_name_one_file(make_store: Callable[[str], Store]) -> None:
    docs = make_store("docs")
    ws = Workspace([Mount.of("/docs", docs)], policy=Policy.allow_all())
    nfc, nfd = "caf\u00e9.md", "cafe\u0301.md"
    assert nfc != nfd and unicodedata.normalize("NFC", nfd) == nfc
    await ws.write(f"/docs/{nfd}", "written as NFD")
    assert await ws.read_text(f"/docs/{nfc}") == "written as NFD"
    await ws.write(f"/docs/{nfc}", "overwritten as NFC")
    assert await ws.read_text(f"/docs/{nfd}") == "overwritten as NFC"
    names = [e.path.name for e in await ws.list("/docs")]
    assert names == [nfc]
    await raises(AlreadyExistsError, ws.write(f"/docs/{nfd}", "x", mode="create"))
    await ws.delete(f"/docs/{nfd}")
    assert await snapshot(docs) == {}


async def test_nfd_spelling_of_a_denied_dir_is_denied(make_store: Callable[[str], Store]) -> None:
    docs = make_store("docs")
    await seed(docs, {"/r\u00e9sum\u00e9/cv.txt": "TOPSECRET cv"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy(rules=(Rule.deny("*", "/docs/r\u00e9sum\u00e9/**"), Rule.allow("*", "/**"))),
    )
    for spelling in ("r\u00e9sum\u00e9", "re\u0301sume\u0301", "r\u00e9sume\u0301"):
        await not_found(ws.read_text(f"/docs/{spelling}/cv.txt"))
        await raises(PolicyDeniedError, ws.write(f"/docs/{spelling}/cv.txt", "x"))
    assert await ws.list("/docs") == []


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a" * 255, True),
        ("a" * 256, False),
        ("\u00e9" * 127, True),  # 254 bytes
        ("\u00e9" * 128, False),  # 256 bytes
        ("\U0001f600" * 63 + "abc", True),  # 255 bytes
        ("\U0001f600" * 64, False),  # 256 bytes
        ("e\u0301" * 85, True),  # 255 bytes as NFD, 170 as NFC: measured after NFC
    ],
    ids=["255", "256", "e-acute-254", "e-acute-256", "emoji-255", "emoji-256", "nfd"],
)
async def test_overlong_names_are_refused_and_long_legal_names_work(
    make_store: Callable[[str], Store], name: str, ok: bool
) -> None:
    docs = make_store("docs")
    ws = Workspace([Mount.of("/docs", docs)], policy=Policy.allow_all())
    if ok:
        await ws.write(f"/docs/{name}", "fits")
        assert await ws.read_text(f"/docs/{name}") == "fits"
        return
    exc = await raises(InvalidPathError, ws.write(f"/docs/{name}", "too long"))
    assert "255 bytes" in str(exc) and len(str(exc)) < 200
    await raises(InvalidPathError, ws.stat(f"/docs/{name}"))
    assert await snapshot(docs) == {}


async def test_overlong_paths_are_refused_and_long_legal_paths_work(
    make_store: Callable[[str], Store],
) -> None:
    docs = make_store("docs")
    ws = Workspace([Mount.of("/docs", docs)], policy=Policy.allow_all())
    legal = "/docs/" + "/".join(["d" * 200] * 19) + "/f.txt"  # 3832 bytes
    assert len(legal.encode()) <= 4096
    await ws.write(legal, "deep")
    assert await ws.read_text(legal) == "deep"
    too_long = "/docs/" + "/".join(["d" * 200] * 21)
    exc = await raises(InvalidPathError, ws.write(too_long, "x"))
    assert "4096 bytes" in str(exc)
    huge = "/docs/" + "a/" * 500_000  # a megabyte of path
    exc = await raises(InvalidPathError, ws.read_text(huge))
    assert len(str(exc)) < 200
    await raises(InvalidPathError, ws.write("/docs/" + "b" * 1_000_000, "x"))


# == 2. NUL, control characters, bidi, backslashes, Windows forms ============================

BAD_PATHS = [
    "/docs/a\x00b",
    "/docs/pub.txt\x00.md",
    "\x00",
    "/docs/\x00/../x",
    "/docs/a\nb",
    "/docs/a\rb",
    "/docs/a\tb",
    "/docs/\x1b[31mred",
    "/docs/a\x7fb",
    "/docs/a\x85b",
    "/docs/a\x9bb",
    "/docs/a\u202eb",
    "/docs/txt.\u202eexe",
    "/docs/\u202dx",
    "/docs/\u202ax",
    "/docs/\u202bx",
    "/docs/\u202cx",
    "/docs/\u2066x",
    "/docs/\u2067x",
    "/docs/\u2068x",
    "/docs/\u2069x",
    "/docs/\u200ex",
    "/docs/\u200fx",
    "..\\..\\x",
    "docs\\a",
    "/docs\\a",
    "/docs/a\\..\\..\\x",
    "/docs/\\",
    "\\docs\\pub.txt",
    "C:\\x",
    "C:/x",
    "c:",
    "c:/",
    "z:",
    "/C:",
    "/docs/C:/x",
    "/docs/d:",
    "\\\\server\\share",
    "//server/share",
    "//server/share/docs/pub.txt",
    "\\\\?\\C:\\",
    "//?/C:/x",
    "//./COM1",
    "\\\\.\\COM1",
    "//",
]


@pytest.mark.parametrize("raw", BAD_PATHS, ids=ascii)
async def test_control_bidi_backslash_and_windows_forms_are_refused(
    vault: Vault, raw: str, tmp_path: Path
) -> None:
    await _assert_every_op_refuses_path(vault, raw, tmp_path)


@pytest.mark.parametrize(
    "raw", [p for p in BAD_PATHS if any(ord(c) < 32 or ord(c) > 126 for c in p)]
)
def test_refusal_message_escapes_control_and_bidi_characters(raw: str) -> None:
    with pytest.raises(InvalidPathError) as info:
        VPath.parse(raw)
    message = str(info.value)
    assert all(unicodedata.category(c) not in ("Cc", "Cf") for c in message), ascii(message)


@pytest.mark.parametrize(
    "pattern",
    ["/docs/../**", "../secret/*", "**/../../etc/*", "/docs/a\x00b", "docs\\*", "**\\*.key"],
    ids=ascii,
)
async def test_hostile_glob_patterns_are_refused(vault: Vault, pattern: str) -> None:
    await raises(InvalidPatternError, vault.ws.glob(pattern))
    await raises(InvalidPatternError, vault.ws.glob(pattern, path="/docs/sub"))
    await raises(InvalidPatternError, vault.ws.grep("needle", "/", glob=pattern))


async def test_glob_relative_to_a_base_cannot_climb_out_of_it(vault: Vault) -> None:
    await raises(InvalidPatternError, vault.ws.glob("../secret/*", path="/docs/sub"))
    await raises(InvalidPatternError, vault.ws.glob("../../**", path="/docs/sub"))
    found = await vault.ws.glob("*", path="/docs/sub")
    assert [str(f.path) for f in found] == ["/docs/sub/ok.md"]


# == 3. prefix collisions ====================================================================

PREFIXES = ["/doc", "/docs", "/docs2", "/docs.bak", "/docs-old", "/docs/sub", "/docsx/y"]


@pytest.fixture
async def prefixed(make_store: Callable[[str], Store]) -> dict[str, Store]:
    stores = {p: make_store(p.strip("/").replace("/", "_")) for p in PREFIXES}
    for prefix, store in stores.items():
        await seed(store, {"/x.txt": f"from {prefix}"})
    return stores


async def test_each_prefix_routes_to_its_own_mount(prefixed: dict[str, Store]) -> None:
    ws = Workspace([Mount.of(p, s) for p, s in prefixed.items()], policy=Policy.allow_all())
    for prefix in PREFIXES:
        assert await ws.read_text(f"{prefix}/x.txt") == f"from {prefix}"
        await ws.write(f"{prefix}/new.txt", f"new in {prefix}")
    for prefix, store in prefixed.items():
        assert await snapshot(store) == {
            "/x.txt": f"from {prefix}".encode(),
            "/new.txt": f"new in {prefix}".encode(),
        }
    names = sorted(e.path.name for e in await ws.list("/docs"))
    assert names == ["new.txt", "sub", "x.txt"]
    await raises(NoMountError, ws.read_text("/do/x.txt"))
    await raises(NoMountError, ws.read_text("/docsx/x.txt"))
    await raises(NoMountError, ws.write("/docs3/x.txt", "no mount, no fallback"))


@pytest.mark.parametrize(
    ("denied", "allowed"),
    [
        ("/docs", ["/doc", "/docs2", "/docs.bak", "/docs-old", "/docsx/y"]),
        ("/docs2", ["/doc", "/docs", "/docs.bak", "/docs-old", "/docs/sub"]),
        ("/doc", ["/docs", "/docs2", "/docs.bak", "/docs-old", "/docs/sub"]),
        ("/docs.bak", ["/docs", "/docs2", "/doc", "/docs-old"]),
    ],
)
async def test_a_rule_on_one_prefix_never_covers_a_lookalike_prefix(
    prefixed: dict[str, Store], denied: str, allowed: list[str]
) -> None:
    ws = Workspace(
        [Mount.of(p, s) for p, s in prefixed.items()],
        policy=Policy(rules=(Rule.deny("*", f"{denied}/**"), Rule.allow("*", "/**"))),
    )
    before = await snapshot(prefixed[denied])
    # a mount the principal may see nothing of is no mount at all, for reads and writes alike
    # (docs/policy.md); told as a path under no mount is
    told = await raises(NoMountError, ws.read_text(f"{denied}/x.txt"))
    assert str(told).startswith(f"{denied}/x.txt is not under any mount; mounted: ")
    assert f"{denied}," not in str(told) + "," or denied == "/doc"
    await raises(NoMountError, ws.write(f"{denied}/x.txt", "overwritten"))
    assert await snapshot(prefixed[denied]) == before
    for prefix in allowed:
        assert await ws.read_text(f"{prefix}/x.txt") == f"from {prefix}"
        await ws.write(f"{prefix}/y.txt", "ok")
    root_names = {str(e.path) for e in await ws.list("/", recursive=True)}
    assert f"{denied}/x.txt" not in root_names
    assert {f"{p}/x.txt" for p in allowed} <= root_names
    hits = await ws.grep("from", "/")
    assert {m.path for m in hits.matches} == {f"{p}/x.txt" for p in PREFIXES if p != denied} - (
        {"/docs/sub/x.txt"} if denied == "/docs" else set()
    )


# == 4. mount scope ==========================================================================


@pytest.fixture
async def scoped(make_store: Callable[[str], Store]) -> tuple[Workspace, dict[str, Store]]:
    stores = {n: make_store(n) for n in ("ro", "rw", "wo")}
    await seed(stores["ro"], {"/a.txt": "alpha\n", "/dir/b.txt": "beta\n", "/empty/": ""})
    await seed(stores["rw"], {"/w.txt": "writable\n", "/wdir/c.txt": "gamma\n"})
    await seed(stores["wo"], {"/in/report.txt": "TOPSECRET dropped report\n"})
    ws = Workspace(
        [
            Mount.of("/ro", stores["ro"], "read_only"),
            Mount.of("/rw", stores["rw"], "read_write"),
            Mount.of("/wo", stores["wo"], "write_only"),
        ],
        policy=Policy.allow_all(),
    )
    return ws, stores


_RO_ATTACKS: dict[str, Callable[[Workspace], Awaitable[Any]]] = {
    "overwrite": lambda ws: ws.write("/ro/a.txt", "pwned"),
    "create": lambda ws: ws.write("/ro/new.txt", "pwned"),
    "create_exclusive": lambda ws: ws.write("/ro/new.txt", "pwned", mode="create"),
    "create_with_parents": lambda ws: ws.write("/ro/new/deep/x.txt", "pwned"),
    "backup_overwrite": lambda ws: ws.write("/ro/a.txt", "pwned", backup=True),
    "append": lambda ws: ws.append("/ro/a.txt", "pwned"),
    "edit": lambda ws: ws.edit("/ro/a.txt", "alpha", "pwned"),
    "delete_file": lambda ws: ws.delete("/ro/a.txt"),
    "delete_empty_dir": lambda ws: ws.delete("/ro/empty"),
    "delete_tree": lambda ws: ws.delete("/ro/dir", recursive=True),
    "mkdir": lambda ws: ws.mkdir("/ro/newdir"),
    "mkdir_nested": lambda ws: ws.mkdir("/ro/dir/newdir"),
    "rename_inside": lambda ws: ws.move("/ro/a.txt", "/ro/moved.txt"),
    "rename_dir_inside": lambda ws: ws.move("/ro/dir", "/ro/moved"),
    "move_file_out": lambda ws: ws.move("/ro/a.txt", "/rw/a.txt"),
    "move_dir_out": lambda ws: ws.move("/ro/dir", "/rw/dir"),
    "move_file_in": lambda ws: ws.move("/rw/w.txt", "/ro/w.txt"),
    "move_dir_in": lambda ws: ws.move("/rw/wdir", "/ro/wdir"),
    "move_in_overwrite": lambda ws: ws.move("/rw/w.txt", "/ro/a.txt", overwrite=True),
    "copy_file_in": lambda ws: ws.copy("/rw/w.txt", "/ro/w.txt"),
    "copy_file_in_overwrite": lambda ws: ws.copy("/rw/w.txt", "/ro/a.txt", overwrite=True),
    "copy_dir_in": lambda ws: ws.copy("/rw/wdir", "/ro/wdir"),
    "copy_inside": lambda ws: ws.copy("/ro/a.txt", "/ro/copy.txt"),
    "sync_write": lambda ws: _sync(ws.sync().write, "/ro/a.txt", "pwned"),
}


async def _sync(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@pytest.mark.parametrize("attack", list(_RO_ATTACKS))
async def test_read_only_mount_refuses_every_change_plainly(
    scoped: tuple[Workspace, dict[str, Store]], attack: str
) -> None:
    ws, stores = scoped
    before = {n: await snapshot(s) for n, s in stores.items()}
    exc = await raises(ScopeError, _RO_ATTACKS[attack](ws))
    message = str(exc)
    assert "read-only" in message and "/ro" in message
    assert "not found" not in message
    assert {n: await snapshot(s) for n, s in stores.items()} == before
    record = ws.audit.records[-1]
    assert not record.allowed and record.reason


async def test_read_only_mount_still_reads_lists_and_searches(
    scoped: tuple[Workspace, dict[str, Store]],
) -> None:
    ws, _ = scoped
    assert await ws.read_text("/ro/a.txt") == "alpha\n"
    assert {str(e.path) for e in await ws.list("/ro", recursive=True)} == {
        "/ro/a.txt",
        "/ro/dir",
        "/ro/dir/b.txt",
        "/ro/empty",
    }
    assert [m.path for m in (await ws.grep("beta", "/ro")).matches] == ["/ro/dir/b.txt"]
    # copying out of a read-only mount is a read: allowed, and the source stays
    await ws.copy("/ro/a.txt", "/rw/a-copy.txt")
    assert await ws.read_text("/rw/a-copy.txt") == "alpha\n"
    assert await ws.read_text("/ro/a.txt") == "alpha\n"


_WO_READS: dict[str, Callable[[Workspace], Awaitable[Any]]] = {
    "read_text": lambda ws: ws.read_text("/wo/in/report.txt"),
    "read_lines": lambda ws: ws.read_text("/wo/in/report.txt", offset=0, limit=1),
    "read_bytes": lambda ws: ws.read_bytes("/wo/in/report.txt"),
    "read_range": lambda ws: ws.read_bytes("/wo/in/report.txt", start=0, end=9),
    "stat_file": lambda ws: ws.stat("/wo/in/report.txt"),
    "stat_dir": lambda ws: ws.stat("/wo/in"),
    "stat_root": lambda ws: ws.stat("/wo"),
    "list_root": lambda ws: ws.list("/wo"),
    "list_dir": lambda ws: ws.list("/wo/in", recursive=True),
    "grep_mount": lambda ws: ws.grep("TOPSECRET", "/wo"),
    "grep_file": lambda ws: ws.grep("TOPSECRET", "/wo/in/report.txt"),
    "edit": lambda ws: ws.edit("/wo/in/report.txt", "TOPSECRET", "x"),
    "copy_out": lambda ws: ws.copy("/wo/in/report.txt", "/rw/stolen.txt"),
    "copy_dir_out": lambda ws: ws.copy("/wo/in", "/rw/stolen"),
    "move_out": lambda ws: ws.move("/wo/in/report.txt", "/rw/stolen.txt"),
    "move_dir_out": lambda ws: ws.move("/wo/in", "/rw/stolen"),
    "rename_inside": lambda ws: ws.move("/wo/in/report.txt", "/wo/in/r2.txt"),
    "delete": lambda ws: ws.delete("/wo/in/report.txt"),
    "delete_tree": lambda ws: ws.delete("/wo/in", recursive=True),
    "sync_read": lambda ws: _sync(ws.sync().read_text, "/wo/in/report.txt"),
}


@pytest.mark.parametrize("attack", list(_WO_READS))
async def test_write_only_mount_never_gives_anything_back(
    scoped: tuple[Workspace, dict[str, Store]], attack: str
) -> None:
    ws, stores = scoped
    before = {n: await snapshot(s) for n, s in stores.items()}
    exc = await raises(ScopeError, _WO_READS[attack](ws))
    assert "write-only" in str(exc)
    assert "TOPSECRET" not in str(exc)
    assert {n: await snapshot(s) for n, s in stores.items()} == before


async def test_write_only_mount_is_empty_to_bulk_tools(
    scoped: tuple[Workspace, dict[str, Store]],
) -> None:
    ws, _ = scoped
    for pattern in ("**", "/wo/**", "/wo/*", "/wo/in/*", "**/report.txt", "**/*.txt"):
        found = [str(f.path) for f in await ws.glob(pattern)]
        assert not [p for p in found if p.startswith("/wo/")], (pattern, found)
    everything = [str(e.path) for e in await ws.list("/", recursive=True)]
    assert not [p for p in everything if p.startswith("/wo/")]
    result = await ws.grep("TOPSECRET", "/")
    assert result.matches == () and result.files_matched == 0
    assert "TOPSECRET" not in result.format() and not result.skipped
    assert result.files_searched == 4  # a.txt, dir/b.txt, w.txt, wdir/c.txt


async def test_write_only_refusal_does_not_reveal_existence(
    scoped: tuple[Workspace, dict[str, Store]],
) -> None:
    ws, _ = scoped
    present = await raises(ScopeError, ws.stat("/wo/in/report.txt"))
    missing = await raises(ScopeError, ws.stat("/wo/in/nothing.txt"))
    assert str(present).replace("report.txt", "X") == str(missing).replace("nothing.txt", "X")
    present = await raises(ScopeError, ws.read_text("/wo/in/report.txt"))
    missing = await raises(ScopeError, ws.read_text("/wo/in/nothing.txt"))
    assert str(present).replace("report.txt", "X") == str(missing).replace("nothing.txt", "X")


async def test_write_only_mount_accepts_writes(scoped: tuple[Workspace, dict[str, Store]]) -> None:
    ws, stores = scoped
    info = await ws.write("/wo/new/drop.txt", "dropped")
    assert str(info.path) == "/wo/new/drop.txt"
    assert await stores["wo"].read_all(VPath.parse("/new/drop.txt")) == b"dropped"


# == 5. bulk tools and lookups leaking denied names ==========================================


async def test_list_shows_only_visible_entries(vault: Vault) -> None:
    ws = vault.ws
    top = {str(e.path) for e in await ws.list("/docs")}
    assert top == {
        "/docs/.gitignore",
        "/docs/big.log",
        "/docs/notes.md",
        "/docs/pub.txt",
        "/docs/sub",
    }
    deep = {str(e.path) for e in await ws.list("/docs", recursive=True)}
    assert deep == {p for p in VISIBLE if p.startswith("/docs/")}
    everything = await ws.list("/", recursive=True)
    assert {str(e.path) for e in everything} == VISIBLE
    assert_no_leak(everything, top, deep)
    assert {str(e.path) for e in await ws.list("/")} == {"/docs", "/internal", "/other"}
    assert {str(e.path) for e in await ws.list("/docs/sub")} == {"/docs/sub/ok.md"}
    assert {str(e.path) for e in await ws.list("/", depth=2)} == {
        p for p in VISIBLE if p.count("/") <= 2
    }
    assert_no_leak(ws.sync().list("/", recursive=True))


@pytest.mark.parametrize(
    "pattern",
    [
        "**",
        "**/*",
        "/**",
        "/*",
        "/*/*",
        "/docs/**",
        "/docs/*",
        "/docs/.*",
        "/docs/secret",
        "/docs/secret/*",
        "/docs/secret/**",
        "/docs/secret/plan.txt",
        "/docs/secret/deep/more.txt",
        "**/plan.txt",
        "**/secret/**",
        "**/*.key",
        "/docs/*.key",
        "/docs/api.key",
        "/docs/api.*",
        "**/.git",
        "**/.git/**",
        "/docs/.git/config",
        "/docs/.GIT/*",
        "**/config",
        "**/HEAD",
        "/docs/s*/**",
        "/docs/[s]ecret/*",
        "/docs/secre?/plan.txt",
        "/docs/[!p]*/**",
        "/conf/**",
        "/conf",
        "/*/c.txt",
        "**/c.txt",
        "/hr/**",
        "/acme/*",
        "**/*TOP*",
        "**/*.bin",
    ],
)
async def test_glob_never_matches_a_denied_entry(vault: Vault, pattern: str) -> None:
    found = await vault.ws.glob(pattern)
    assert {str(f.path) for f in found} <= VISIBLE
    assert_no_leak(found)
    for base in ("/docs", "/docs/sub", "/"):
        relative = pattern.lstrip("/")
        more = await vault.ws.glob(relative, path=base)
        assert {str(f.path) for f in more} <= VISIBLE
        assert_no_leak(more)


async def test_glob_with_explicit_names_of_denied_entries_is_empty(vault: Vault) -> None:
    for pattern in HIDDEN_PATHS:
        assert await vault.ws.glob(pattern) == [], pattern
    assert await vault.ws.glob("**", path="/docs/secret") == []
    assert await vault.ws.glob("*", path="/conf") == []


async def test_grep_finds_nothing_that_lives_only_in_denied_files(vault: Vault) -> None:
    ws = vault.ws
    for path in ("/", "/docs", "/docs/sub", "/other", "/internal"):
        for pattern, regex in (("TOPSECRET", False), ("topsecret", False), ("TOP.*RET", True)):
            result = await ws.grep(pattern, path, regex=regex, ignore_case=True, context=3)
            assert result.matches == () and result.files_matched == 0, (path, pattern)
            assert not result.truncated
            assert_no_leak(result, result.format(), result.skipped)


async def test_grep_counts_and_skips_only_visible_files(vault: Vault) -> None:
    result = await vault.ws.grep("needle", "/", context=2)
    assert {m.path for m in result.matches} == {
        "/docs/pub.txt",
        "/docs/notes.md",
        "/docs/sub/ok.md",
        "/internal/i.txt",
        "/other/o.txt",
    }
    assert result.files_matched == 5
    # .gitignore, notes.md, pub.txt, sub/ok.md, internal/i.txt, other/o.txt; big.log skipped
    assert result.files_searched == 6
    assert result.skipped == ("/docs/big.log: over the 4096-byte size limit",)
    assert_no_leak(result, result.format(), result.skipped)
    sync_result = vault.ws.sync().grep("needle", "/")
    assert sync_result.files_searched == 6 and sync_result.files_matched == 5


@pytest.mark.parametrize("glob", ["*.key", "**/*.key", "secret/**", "**/.git/**", "*.bin", "*"])
async def test_grep_name_filters_naming_denied_files_search_nothing_hidden(
    vault: Vault, glob: str
) -> None:
    result = await vault.ws.grep("needle", "/docs", glob=glob)
    assert {m.path for m in result.matches} <= VISIBLE
    assert_no_leak(result, result.format(), result.skipped)
    assert result.files_searched <= 4


@pytest.mark.parametrize("path", HIDDEN_PATHS)
async def test_lookups_of_denied_entries_say_not_found(vault: Vault, path: str) -> None:
    ws = vault.ws
    assert await ws.exists(path) is False
    await not_found(ws.stat(path))
    await not_found(ws.read_text(path))
    await not_found(ws.read_bytes(path, start=0, end=4))
    await not_found(ws.read_text(path, offset=0, limit=1))
    await not_found(ws.list(path))
    await not_found(ws.grep("needle", path))
    await not_found(ws.edit(path, "TOPSECRET", "x"))
    await not_found(ws.edit(path, "absent text", "x"))
    await not_found(ws.copy(path, "/other/stolen"))
    with pytest.raises((NotFoundError, NoMountError)) as info:
        ws.sync().read_text(path)
    assert_plain_not_found(info.value)
    assert ws.sync().exists(path) is False


@pytest.mark.parametrize("path", HIDDEN_PATHS)
async def test_changes_to_denied_entries_are_refused_and_change_nothing(
    vault: Vault, path: str
) -> None:
    ws = vault.ws
    before = await vault.snapshots()
    attempts: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.delete(path),
        lambda: ws.delete(path, recursive=True),
        lambda: ws.move(path, "/other/stolen"),
        lambda: ws.move(path, "/docs/stolen"),
        lambda: ws.move(path, "/docs/stolen", overwrite=True),
    ]
    for attempt in attempts:
        exc = await raises(OperationError, attempt())
        assert isinstance(exc, NotFoundError | PolicyDeniedError | AccessDeniedError), exc
        assert "TOPSECRET" not in str(exc)
    assert await vault.snapshots() == before


async def test_filesystem_map_names_only_visible_mounts(vault: Vault) -> None:
    text = vault.ws.filesystem_map()
    for visible in ("/docs/", "/other/", "/internal/"):
        assert visible in text
    assert_no_leak(text)
    assert vault.ws.sync().filesystem_map() == text


async def test_label_hidden_mounts_are_invisible_to_the_uncleared(vault: Vault) -> None:
    ws = vault.ws
    root = {str(e.path) for e in await ws.list("/")}
    assert root == {"/docs", "/internal", "/other"}
    for mount in ("/conf", "/hr", "/acme"):
        assert not await ws.exists(mount)
        await not_found(ws.stat(mount))
        await not_found(ws.list(mount))
        assert await ws.glob(f"{mount}/**") == []


@pytest.mark.parametrize(
    ("principal", "mount", "file"),
    [
        (Principal.of("boss", clearance="confidential"), "/conf", "/conf/c.txt"),
        (Principal.of("boss", clearance="restricted"), "/conf", "/conf/c.txt"),
        (Principal.of("hr-1", roles={"hr"}, clearance="internal"), "/hr", "/hr/h.txt"),
        (Principal.of("acme-1", tenant="acme", clearance="internal"), "/acme", "/acme/a.txt"),
    ],
)
async def test_label_admitted_principal_sees_the_mount(
    vault: Vault, principal: Principal, mount: str, file: str
) -> None:
    """Positive control: the hidden mounts are hidden by labels, not broken."""
    ws = vault.ws.with_principal(principal)
    assert mount in {str(e.path) for e in await ws.list("/")}
    assert "TOPSECRET" in await ws.read_text(file)
    assert f"{mount}/" in ws.filesystem_map()
    # ... and the original principal still does not
    assert not await vault.ws.exists(file)


@pytest.mark.parametrize(
    "principal",
    [
        Principal.of("x", clearance="public"),
        Principal.of("x", clearance="internal", roles={"engineer", "hr-adjacent"}),
        Principal.of("x", clearance="secret-level"),  # unknown level admits nothing
        Principal.of("x", tenant="acme2", clearance="internal"),
        Principal.of("x", tenant="ACME", clearance="internal"),
    ],
)
async def test_near_miss_principals_stay_outside_label_hidden_mounts(
    vault: Vault, principal: Principal
) -> None:
    ws = vault.ws.with_principal(principal)
    for file in ("/conf/c.txt", "/hr/h.txt", "/acme/a.txt"):
        await not_found(ws.read_text(file))
    try:  # a principal who sees no mount at all gets "/ not found" (fail closed)
        result = await ws.grep("TOPSECRET", "/")
        listing = await ws.list("/", recursive=True)
    except NotFoundError as exc:
        assert_plain_not_found(exc)
    else:
        assert result.matches == ()
        assert_no_leak(listing)
    assert_no_leak(ws.filesystem_map())


async def test_labelled_read_only_mount_is_invisible_too(
    make_store: Callable[[str], Store],
) -> None:
    secret, pub = make_store("secret"), make_store("pub")
    await seed(secret, {"/s.txt": "TOPSECRET"})
    ws = Workspace(
        [
            Mount.of("/vault", secret, "read_only", labels=Labels(classification="restricted")),
            Mount.of("/pub", pub),
        ],
        policy=Policy.allow_all(),
        principal=Principal.of("agent", clearance="confidential"),
    )
    assert {str(e.path) for e in await ws.list("/", recursive=True)} == {"/pub"}
    assert "/vault" not in ws.filesystem_map()
    await not_found(ws.read_text("/vault/s.txt"))
    assert (await ws.grep("TOPSECRET", "/")).files_searched == 0


# == 6. recursive delete / move of an ancestor of a protected entry ==========================


@dataclass(frozen=True)
class Protected:
    """A directory tree ``/docs/proj`` with one entry the principal may not touch."""

    name: str
    files: dict[str, str]
    rules: tuple[Rule, ...]
    protected_words: tuple[str, ...]
    blocked: frozenset[str] = frozenset()
    hidden: bool = True
    """False when the principal may see (and copy) the protected entry, just not delete it."""


PROTECTED = [
    Protected(
        "denied-dir",
        {"/proj/secret/x.txt": "TOPSECRET"},
        (Rule.deny("*", "/docs/proj/secret/**"),),
        ("secret", "x.txt"),
    ),
    Protected(
        "denied-deep-file",
        {"/proj/sub/deeper/id.key": "TOPSECRET"},
        (Rule.deny("*", "/docs/**/*.key"),),
        ("id.key",),
    ),
    Protected(
        "blocked-segment",
        {"/proj/.git/config": "TOPSECRET"},
        (),
        (".git", "config"),
        frozenset({".git"}),
    ),
    Protected(
        "blocked-segment-other-case",
        {"/proj/sub/.GIT/HEAD": "TOPSECRET"},
        (),
        (".GIT", "HEAD"),
        frozenset({".git"}),
    ),
    Protected(
        "visible-but-undeletable",
        {"/proj/sub/keep.txt": "keep me"},
        (Rule.deny("delete", "/docs/proj/sub/keep.txt"),),
        ("keep.txt",),
        hidden=False,
    ),
    Protected(
        "unlistable-dir",
        {"/proj/private/notes.txt": "TOPSECRET"},
        (Rule.deny("list", "/docs/proj/private"),),
        ("private", "notes.txt"),
    ),
]


@pytest.fixture(params=PROTECTED, ids=lambda p: p.name)
async def protected(
    request: pytest.FixtureRequest, make_store: Callable[[str], Store]
) -> tuple[Workspace, Store, Store, Protected]:
    case: Protected = request.param
    docs, other = make_store("docs"), make_store("other")
    await seed(
        docs,
        {
            "/proj/a.txt": "visible a",
            "/proj/sub/b.txt": "visible b",
            "/proj/empty/": "",
            **case.files,
        },
    )
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/other", other)],
        policy=Policy(
            rules=(*case.rules, Rule.allow("*", "/**")),
            limits=FileLimits(blocked_segments=case.blocked),
        ),
    )
    return ws, docs, other, case


def _assert_refusal_names_nothing_protected(exc: BaseException, case: Protected) -> None:
    message = str(exc)
    assert "TOPSECRET" not in message
    for word in case.protected_words:
        assert word not in message, f"{word!r} named in {message!r}"


async def _refused_as_visible(ws: Workspace, docs: Store, case: Protected, call: Any) -> None:
    """An entry the caller sees but may not delete refuses the whole change, naming nothing."""
    before = await snapshot(docs)
    exc = await raises(PolicyDeniedError, call)
    _assert_refusal_names_nothing_protected(exc, case)
    assert await snapshot(docs) == before
    record = ws.audit.records[-1]
    assert not record.allowed and "protected descendant /docs/proj/" in record.reason


async def _hidden_stay(docs: Store, case: Protected) -> dict[str, bytes | None]:
    """The protected entries are where they were, unchanged; the store's snapshot."""
    after = await snapshot(docs)
    for path, content in case.files.items():
        assert after[path] == content.encode(), path
    return after


async def test_recursive_delete_of_an_ancestor_deletes_only_what_the_caller_sees(
    protected: tuple[Workspace, Store, Store, Protected],
) -> None:
    """Hidden entries are not there for the caller (docs/security.md, no existence oracles):
    deleting their ancestor deletes what the caller sees, answers as it would without them,
    and leaves them where they are. To the caller the folder is then gone."""
    ws, docs, _, case = protected
    if not case.hidden:
        await _refused_as_visible(ws, docs, case, ws.delete("/docs/proj", recursive=True))
        with pytest.raises(PolicyDeniedError):  # the blocking facade refuses the same way
            ws.sync().delete("/docs/proj", recursive=True)
        return
    await ws.delete("/docs/proj", recursive=True)
    after = await _hidden_stay(docs, case)
    assert not {"/proj/a.txt", "/proj/sub/b.txt", "/proj/empty"} & set(after)
    await not_found(ws.stat("/docs/proj"))
    assert await ws.list("/docs") == []


async def test_rename_of_an_ancestor_inside_the_mount_moves_only_what_the_caller_sees(
    protected: tuple[Workspace, Store, Store, Protected],
) -> None:
    ws, docs, _, case = protected
    if not case.hidden:
        await _refused_as_visible(ws, docs, case, ws.move("/docs/proj", "/docs/open"))
        return
    await ws.move("/docs/proj", "/docs/proj2/nested")
    after = await _hidden_stay(docs, case)
    assert after["/proj2/nested/a.txt"] == b"visible a"
    assert after["/proj2/nested/sub/b.txt"] == b"visible b"
    assert not [p for p in after if p.startswith("/proj2") and "TOPSECRET" in str(after[p])]
    moved = {str(e.path) for e in await ws.list("/docs", recursive=True)}
    assert not [p for p in moved if any(w in p for w in case.protected_words)]
    await not_found(ws.stat("/docs/proj"))


async def test_move_of_an_ancestor_to_another_mount_exposes_nothing(
    protected: tuple[Workspace, Store, Store, Protected],
) -> None:
    ws, docs, other, case = protected
    if not case.hidden:
        await _refused_as_visible(ws, docs, case, ws.move("/docs/proj", "/other/proj"))
        assert await snapshot(other) == {}
        return
    await ws.move("/docs/proj", "/other/proj")
    await _hidden_stay(docs, case)
    moved = await snapshot(other)
    assert b"TOPSECRET" not in moved.values()
    assert moved["/proj/a.txt"] == b"visible a"
    assert not [p for p in moved if any(w in p for w in case.protected_words)]


async def test_copy_of_an_ancestor_leaves_protected_entries_behind(
    protected: tuple[Workspace, Store, Store, Protected],
) -> None:
    """A copy is a read: hidden entries stay behind, readable-but-undeletable ones come along."""
    ws, docs, other, case = protected
    before = await snapshot(docs)
    for target in ("/other/copy", "/docs/copy"):
        await ws.copy("/docs/proj", target)
        copied = {e.path.name for e in await ws.list(target, recursive=True)}
        assert copied >= {"a.txt", "b.txt"}
        if case.hidden:
            assert not [w for w in case.protected_words if w in copied], copied
        else:
            assert set(case.protected_words) <= copied
    assert b"TOPSECRET" not in (await snapshot(other)).values()
    after = await snapshot(docs)
    assert {k: v for k, v in after.items() if not k.startswith("/copy")} == before
    if case.hidden:
        assert not [
            k for k in after if k.startswith("/copy") and any(w in k for w in case.protected_words)
        ]


async def test_deleting_or_moving_the_protected_dir_itself_is_refused(
    make_store: Callable[[str], Store],
) -> None:
    docs = make_store("docs")
    await seed(docs, {"/team/private/plan.txt": "TOPSECRET", "/team/pub.txt": "pub"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy(rules=(Rule.deny("*", "/docs/team/private/**"), Rule.allow("*", "/**"))),
    )
    before = await snapshot(docs)
    await not_found(ws.delete("/docs/team/private", recursive=True))
    await not_found(ws.move("/docs/team/private", "/docs/open"))
    await not_found(ws.move("/docs/team/x/../private", "/docs/team/public"))
    assert await snapshot(docs) == before
    # the parent moves without what the caller cannot see, which stays where it was
    await ws.move("/docs/team", "/docs/open")
    assert await ws.read_text("/docs/open/pub.txt") == "pub"
    assert (await snapshot(docs))["/team/private/plan.txt"] == b"TOPSECRET"
    await ws.delete("/docs/open", recursive=True)
    assert await snapshot(docs) == {
        "/team": None,
        "/team/private": None,
        "/team/private/plan.txt": b"TOPSECRET",
    }


async def test_mount_roots_and_virtual_dirs_cannot_be_deleted_or_moved(
    make_store: Callable[[str], Store],
) -> None:
    docs, nested, other = make_store("docs"), make_store("nested"), make_store("other")
    await seed(docs, {"/a.txt": "a"})
    await seed(nested, {"/b.txt": "b"})
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/v/nested", nested), Mount.of("/other", other)],
        policy=Policy.allow_all(),
    )
    before = {n: await snapshot(s) for n, s in (("d", docs), ("n", nested), ("o", other))}
    for path in ("/docs", "/v", "/v/nested", "/", "/docs/.", "/v/nested/../nested"):
        for recursive in (False, True):
            exc = await raises(PolicyDeniedError, ws.delete(path, recursive=recursive))
            assert "mount point" in str(exc)
        await raises(PolicyDeniedError, ws.move(path, "/other/moved"))
    await raises(AlreadyExistsError, ws.move("/docs/a.txt", "/other"))
    await raises(AlreadyExistsError, ws.move("/docs/a.txt", "/v"))
    await raises(IsADirectoryError_, ws.write("/docs", "x"))
    await raises(IsADirectoryError_, ws.write("/v", "x"))
    await raises(OperationError, ws.copy("/docs/a.txt", "/other"))
    assert {n: await snapshot(s) for n, s in (("d", docs), ("n", nested), ("o", other))} == before


# == 7. move / copy never overwrite silently =================================================


@pytest.fixture
async def pair(make_store: Callable[[str], Store]) -> tuple[Workspace, Store, Store]:
    a, b = make_store("a"), make_store("b")
    await seed(a, {"/f.txt": "F", "/g.txt": "G", "/dir/in.txt": "IN", "/dir2/x.txt": "X"})
    await seed(b, {"/f.txt": "OTHER F", "/dir/keep.txt": "KEEP"})
    ws = Workspace([Mount.of("/a", a), Mount.of("/b", b)], policy=Policy.allow_all())
    return ws, a, b


_OVERWRITES: dict[str, tuple[Callable[[Workspace], Awaitable[Any]], type[OperationError]]] = {
    "move_file_onto_file": (lambda ws: ws.move("/a/f.txt", "/a/g.txt"), AlreadyExistsError),
    "move_file_onto_dir": (lambda ws: ws.move("/a/f.txt", "/a/dir"), AlreadyExistsError),
    "move_dir_onto_dir": (lambda ws: ws.move("/a/dir2", "/a/dir"), AlreadyExistsError),
    "move_dir_onto_file": (lambda ws: ws.move("/a/dir", "/a/f.txt"), AlreadyExistsError),
    "move_file_onto_dir_overwrite": (
        lambda ws: ws.move("/a/f.txt", "/a/dir", overwrite=True),
        IsADirectoryError_,
    ),
    "xmove_file_onto_file": (lambda ws: ws.move("/a/f.txt", "/b/f.txt"), AlreadyExistsError),
    "xmove_file_onto_dir": (lambda ws: ws.move("/a/f.txt", "/b/dir"), AlreadyExistsError),
    "xmove_dir_onto_dir": (lambda ws: ws.move("/a/dir", "/b/dir"), AlreadyExistsError),
    "xmove_file_onto_dir_overwrite": (
        lambda ws: ws.move("/a/f.txt", "/b/dir", overwrite=True),
        IsADirectoryError_,
    ),
    "copy_file_onto_file": (lambda ws: ws.copy("/a/f.txt", "/a/g.txt"), AlreadyExistsError),
    "xcopy_file_onto_file": (lambda ws: ws.copy("/a/f.txt", "/b/f.txt"), AlreadyExistsError),
    "copy_file_onto_dir": (lambda ws: ws.copy("/a/f.txt", "/a/dir"), IsADirectoryError_),
    "write_create_onto_file": (
        lambda ws: ws.write("/a/f.txt", "new", mode="create"),
        AlreadyExistsError,
    ),
    "write_onto_dir": (lambda ws: ws.write("/a/dir", "new"), IsADirectoryError_),
    "move_into_itself": (lambda ws: ws.move("/a/dir", "/a/dir/sub"), OperationError),
    "copy_into_itself": (lambda ws: ws.copy("/a/dir", "/a/dir/sub"), OperationError),
}


@pytest.mark.parametrize("case", list(_OVERWRITES))
async def test_move_and_copy_never_overwrite_silently(
    pair: tuple[Workspace, Store, Store], case: str
) -> None:
    ws, a, b = pair
    before = (await snapshot(a), await snapshot(b))
    attack, expected = _OVERWRITES[case]
    await raises(expected, attack(ws))
    assert (await snapshot(a), await snapshot(b)) == before


async def test_overwrite_true_replaces_only_the_target_file(
    pair: tuple[Workspace, Store, Store],
) -> None:
    ws, _, _ = pair
    await ws.move("/a/f.txt", "/a/g.txt", overwrite=True)
    assert await ws.read_text("/a/g.txt") == "F" and not await ws.exists("/a/f.txt")
    await ws.copy("/a/g.txt", "/b/f.txt", overwrite=True)
    assert await ws.read_text("/b/f.txt") == "F" and await ws.read_text("/a/g.txt") == "F"
    await ws.move("/a/g.txt", "/b/f.txt", overwrite=True)
    assert await ws.read_text("/b/f.txt") == "F" and not await ws.exists("/a/g.txt")
    assert await ws.read_text("/b/dir/keep.txt") == "KEEP"


async def test_copying_a_tree_onto_a_tree_never_replaces_files(
    pair: tuple[Workspace, Store, Store],
) -> None:
    ws, a, _ = pair
    await seed(a, {"/dir/keep.txt": "NEW KEEP"})
    await raises(AlreadyExistsError, ws.copy("/a/dir", "/b/dir"))
    assert await ws.read_text("/b/dir/keep.txt") == "KEEP"


# == 9. policy: default deny, tenants, roles, inheritance ====================================


@pytest.fixture
async def docs_store(make_store: Callable[[str], Store]) -> Store:
    store = make_store("docs")
    await seed(store, {"/a.txt": "TOPSECRET a", "/dir/b.txt": "TOPSECRET b"})
    return store


def _ws(store: Store, policy: Policy, principal: Principal) -> Workspace:
    return Workspace([Mount.of("/docs", store)], policy=policy, principal=principal)


async def _assert_no_access(ws: Workspace, store: Store, *, seen: bool = False) -> None:
    """Nothing of ``/docs`` may be read. Unless a rule could let the principal see something
    deeper in it (``seen``), it is no mount at all, for writes too (docs/policy.md)."""
    before = await snapshot(store)
    if seen:
        await raises(PolicyDeniedError, ws.write("/docs/new.txt", "x"))
        await raises(PolicyDeniedError, ws.write("/docs/dir/new.txt", "x"))
    else:
        told = await raises(NoMountError, ws.write("/docs/new.txt", "x"))
        assert str(told) == "/docs/new.txt is not under any mount; mounted: (none)"
        await raises(NoMountError, ws.write("/docs/dir/new.txt", "x"))
    await not_found(ws.read_text("/docs/a.txt"))
    await not_found(ws.stat("/docs/dir"))
    assert not await ws.exists("/docs/a.txt")
    assert await ws.glob("**") == []
    attempts: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.delete("/docs/a.txt"),
        lambda: ws.move("/docs/a.txt", "/docs/c.txt"),
        lambda: ws.edit("/docs/a.txt", "TOPSECRET", "x"),
        lambda: ws.copy("/docs/a.txt", "/docs/c.txt"),
    ]
    for attempt in attempts:
        exc = await raises(OperationError, attempt())
        assert isinstance(exc, NotFoundError | PolicyDeniedError)
        assert "TOPSECRET" not in str(exc)
    listings: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.list("/"),
        lambda: ws.list("/docs"),
        lambda: ws.grep("TOPSECRET", "/"),
    ]
    for listing in listings:
        try:
            result = await listing()
        except NotFoundError as exc:
            assert_plain_not_found(exc)
        else:
            assert not result if isinstance(result, list) else result.matches == ()
    assert "(no mounts are available to you)" in ws.filesystem_map()
    assert await snapshot(store) == before


async def test_no_rules_means_default_deny(docs_store: Store) -> None:
    sink = MemoryAuditSink()
    agent = Principal.of("agent", roles={"admin"}, clearance="restricted")
    ws = Workspace([Mount.of("/docs", docs_store)], policy=Policy(), principal=agent, audit=sink)
    await _assert_no_access(ws, docs_store)
    assert any(
        r.reason.endswith("no rule matched (default deny)") and not r.allowed for r in sink.records
    )
    # the agent's own records read as its answers did
    assert not any("default deny" in r.reason for r in ws.audit.records)


@pytest.mark.parametrize(
    ("rule", "principal"),
    [
        (Rule.allow("*", "/**", tenants={"acme"}), Principal.of("agent", tenant="globex")),
        (Rule.allow("*", "/**", tenants={"acme"}), Principal.of("acme", tenant="default")),
        (Rule.allow("*", "/**", roles={"admin"}), Principal.of("agent", roles={"engineer"})),
        (Rule.allow("*", "/**", roles={"admin"}), Principal.of("admin", roles=set())),
        (Rule.allow("*", "/**", principals={"alice"}), Principal.of("bob")),
        (Rule.allow("*", "/**", principals={"alice"}), Principal.of("Alice")),
        (Rule.allow("*", "/other/**"), Principal.of("agent")),
        (Rule.allow("*", "/docs2/**"), Principal.of("agent")),
        (Rule.allow("*", "/doc*/private/**"), Principal.of("agent")),
        (Rule.allow("write", "/other/**"), Principal.of("agent")),
    ],
)
async def test_rules_for_someone_or_somewhere_else_do_not_apply(
    docs_store: Store, rule: Rule, principal: Principal
) -> None:
    seen = rule.paths == ("/doc*/private/**",)  # it may read /docs/private/...: /docs is there
    ws = _ws(docs_store, Policy(rules=(rule,)), principal)
    await _assert_no_access(ws, docs_store, seen=seen)


async def test_matching_principal_gets_access_positive_control(docs_store: Store) -> None:
    policy = Policy(
        rules=(
            Rule.allow("*", "/**", tenants={"acme"}, roles={"admin"}),
            Rule.allow("read", "/**", principals={"alice"}),
        )
    )
    admin = _ws(docs_store, policy, Principal.of("x", tenant="acme", roles={"admin"}))
    assert await admin.read_text("/docs/a.txt") == "TOPSECRET a"
    await admin.write("/docs/new.txt", "ok")
    alice = admin.with_principal(Principal.of("alice"))
    assert await alice.read_text("/docs/a.txt") == "TOPSECRET a"
    await raises(PolicyDeniedError, alice.write("/docs/alice.txt", "no write rule"))
    await raises(PolicyDeniedError, alice.delete("/docs/a.txt"))


async def test_role_inheritance_grants_and_only_grants_upwards(docs_store: Store) -> None:
    policy = Policy(
        rules=(
            Rule.allow({"read", "list", "search"}, "/docs/**", roles={"reader"}),
            Rule.allow("*", "/docs/**", roles={"lead"}),
        ),
        roles=RoleGraph.from_mapping({"lead": ["engineer"], "engineer": ["reader"]}),
    )
    engineer = _ws(docs_store, policy, Principal.of("eng", roles={"engineer"}))
    assert await engineer.read_text("/docs/dir/b.txt") == "TOPSECRET b"
    await raises(PolicyDeniedError, engineer.write("/docs/new.txt", "x"))
    lead = engineer.with_principal(Principal.of("lead", roles={"lead"}))
    assert await lead.read_text("/docs/a.txt") == "TOPSECRET a"  # lead -> engineer -> reader
    await lead.write("/docs/new.txt", "x")
    nobody = engineer.with_principal(Principal.of("n", roles={"contractor"}))
    await not_found(nobody.read_text("/docs/a.txt"))


@pytest.mark.parametrize(
    ("rules", "readable"),
    [
        ((Rule.allow("*", "/docs/**"), Rule.deny("*", "/docs/a.txt")), True),
        ((Rule.deny("*", "/docs/a.txt"), Rule.allow("*", "/docs/**")), False),
        ((Rule.deny("write", "/docs/a.txt"), Rule.allow("*", "/docs/**")), True),
        ((Rule.deny("read", "/docs/a.txt", roles={"intern"}), Rule.allow("*", "/**")), True),
    ],
)
async def test_first_matching_rule_wins(
    docs_store: Store, rules: tuple[Rule, ...], readable: bool
) -> None:
    ws = _ws(docs_store, Policy(rules=rules), Principal.of("agent", roles={"engineer"}))
    if readable:
        assert await ws.read_text("/docs/a.txt") == "TOPSECRET a"
    else:
        await not_found(ws.read_text("/docs/a.txt"))
        assert "a.txt" not in {e.path.name for e in await ws.list("/docs")}


async def test_policy_denied_write_changes_nothing_and_names_the_public_reason(
    docs_store: Store,
) -> None:
    policy = Policy(
        rules=(
            Rule.deny("write", "/docs/dir/**", description="dir is frozen"),
            Rule.allow("*", "/**"),
        )
    )
    ws = _ws(docs_store, policy, Principal.of("agent"))
    before = await snapshot(docs_store)
    exc = await raises(PolicyDeniedError, ws.write("/docs/dir/b.txt", "x"))
    assert "dir is frozen" in str(exc)
    await raises(PolicyDeniedError, ws.edit("/docs/dir/b.txt", "TOPSECRET", "x"))
    await raises(PolicyDeniedError, ws.move("/docs/a.txt", "/docs/dir/a.txt"))
    await raises(PolicyDeniedError, ws.copy("/docs/a.txt", "/docs/dir/a.txt"))
    await raises(PolicyDeniedError, ws.mkdir("/docs/dir/sub"))
    assert await snapshot(docs_store) == before


# == 10. audit ===============================================================================


async def test_every_refusal_is_audited_with_its_reason(vault: Vault) -> None:
    ws = vault.ws
    hidden = (NotFoundError, NoMountError)
    cases: list[
        tuple[
            str, Callable[[], Awaitable[Any]], type[BaseException] | tuple[type[BaseException], ...]
        ]
    ] = [
        ("read", lambda: ws.read_text("/docs/secret/plan.txt"), hidden),
        ("stat", lambda: ws.stat("/docs/api.key"), hidden),
        ("read", lambda: ws.read_text("/docs/.git/config"), hidden),
        ("read", lambda: ws.read_text("/conf/c.txt"), hidden),
        ("write", lambda: ws.write("/docs/secret/new.txt", "x"), PolicyDeniedError),
        ("write", lambda: ws.write("/docs/.git/hook", "x"), LimitError),
        ("write", lambda: ws.write("/docs/huge.txt", "x" * 5000), LimitError),
        ("read", lambda: ws.read_text("/docs/big.log"), LimitError),
        ("delete", lambda: ws.delete("/docs/api.key"), hidden),
        ("move", lambda: ws.move("/docs/secret", "/docs/open"), hidden),
        ("copy", lambda: ws.copy("/docs/secret/plan.txt", "/other/p.txt"), hidden),
        ("delete", lambda: ws.delete("/docs"), PolicyDeniedError),
    ]
    for operation, attempt, expected in cases:
        count = len(vault.sink.records)
        exc = await raises(expected, attempt())
        new = vault.sink.records[count:]
        assert len(new) == 1, (operation, new)
        record = new[0]
        assert record.operation == operation
        assert record.allowed is False and record.reason
        assert record.principal == "agent" and record.tenant == "default"
        if isinstance(exc, NotFoundError):
            assert record.reason.startswith("hidden: ")
            assert record.reason not in str(exc)
            assert_plain_not_found(exc)
        # the caller's own record reads as its answer did (a hidden entry as a missing one)
        assert ws.audit.records[-1].reason == f"{type(exc).__name__}: {exc}"
    for record in ws.audit.records:
        assert "TOPSECRET" not in repr(record.to_dict())


async def test_a_tree_change_over_hidden_descendants_tells_the_caller_nothing(
    make_store: Callable[[str], Store],
) -> None:
    docs = make_store("docs")
    await seed(docs, {"/proj/pub.txt": "p", "/proj/hidden/salaries.csv": "TOPSECRET"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy(rules=(Rule.deny("*", "/docs/proj/hidden/**"), Rule.allow("*", "/**"))),
    )
    await ws.delete("/docs/proj", recursive=True)
    record = ws.audit.records[-1]
    assert record.allowed and "salaries" not in repr(record.to_dict())
    assert (await snapshot(docs))["/proj/hidden/salaries.csv"] == b"TOPSECRET"
    await not_found(ws.list("/docs/proj"))
    await ws.write("/docs/proj/new.txt", "n")  # writing there works as for a fresh name
    assert [e.path.name for e in await ws.list("/docs/proj")] == ["new.txt"]


async def test_refusals_through_views_and_the_facade_are_audited_for_their_principal(
    vault: Vault,
) -> None:
    eve = vault.ws.with_principal(Principal.of("eve", tenant="t2", clearance="public"))
    exc = await not_found(eve.read_text("/internal/i.txt"))
    record = eve.audit.records[-1]  # a principal reads its own records, as it was answered
    assert (record.principal, record.tenant, record.allowed) == ("eve", "t2", False)
    assert record.reason == f"{type(exc).__name__}: {exc}"
    true = [r for r in vault.sink.records if r.principal == "eve"][-1]  # the operator's
    assert "labels do not admit the principal" in true.reason
    with pytest.raises(NotFoundError):
        eve.sync().read_text("/docs/secret/plan.txt")
    record = eve.sync().audit.records[-1]
    assert (record.principal, record.operation, record.allowed) == ("eve", "read", False)
    assert record.reason == "NotFoundError: /docs/secret/plan.txt not found"
    true = [r for r in vault.sink.records if r.principal == "eve"][-1]
    assert true.reason.startswith("hidden: deny read")


async def test_scope_refusal_is_audited(scoped: tuple[Workspace, dict[str, Store]]) -> None:
    ws, _ = scoped
    with pytest.raises(ScopeError) as info:
        ws.sync().write("/ro/a.txt", "x")
    record = ws.audit.records[-1]
    assert record.operation == "write" and not record.allowed
    assert "ScopeError" in record.reason or "read-only" in record.reason
    assert "read-only" in str(info.value)
    count = len(ws.audit.records)
    await raises(ScopeError, ws.read_text("/wo/in/report.txt"))
    assert len(ws.audit.records) == count + 1 and not ws.audit.records[-1].allowed
    assert "TOPSECRET" not in repr(ws.audit.records[-1].to_dict())
