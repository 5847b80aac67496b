"""Resource attacks: hostile regular expressions and globs must finish, and files over the
size limit are neither written (not even partly) nor read whole.

Hostile-pattern calls run on a daemon thread with a hard 10 s guard: a hang fails the test
instead of hanging the run. There is no timing assertion beyond that guard.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest
from security_stores import seed as _seed
from security_stores import snapshot as _snapshot

from bastion.core.errors import (
    InvalidPatternError,
    LimitError,
    NotFoundError,
)
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.ports import Store
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

HARD_TIMEOUT = 10.0
T = TypeVar("T")


def finishes(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``make()`` on its own loop in a daemon thread; fail if it takes over 10 s."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # handed back to the test thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HARD_TIMEOUT)
    assert not thread.is_alive(), f"did not finish within {HARD_TIMEOUT}s"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


# == 11. hostile regular expressions and globs ===============================================


@pytest.fixture
def haystack() -> Workspace:
    """The regex engine is store-independent: one memory store is enough."""
    store = MemoryStore()
    asyncio.run(
        _seed(
            store,
            {
                "/a.txt": b"a" * 100_000,
                "/a-bang.txt": b"a" * 99_999 + b"!",
                "/lines.txt": b"aaaa\n" * 20_000,
                "/words.txt": (b"word " * 20_000).rstrip() + b"!",
            },
        )
    )
    return Workspace([Mount.of("/h", store)], policy=Policy.allow_all())


@pytest.mark.parametrize(
    ("pattern", "matching"),
    [
        (r"(a+)+$", {"/h/a.txt", "/h/lines.txt"}),
        (r"(a+)+b", set()),
        (r"(a|aa)+b", set()),
        (r"(a|a)*b", set()),
        (r"(a*)*b", set()),
        (r"^(a|a?)+$", {"/h/a.txt", "/h/lines.txt"}),
        (r"(.*a){20}", {"/h/a.txt", "/h/a-bang.txt"}),
        (r"(.*a){20}!", {"/h/a-bang.txt"}),
        (r"((a+)+)+c", set()),
        (r"(x+x+)+y", set()),
        (r"^(\w+\s?)*$", {"/h/a.txt", "/h/lines.txt"}),
        (r"(\w+\s?)*\?", set()),
        (r"(a?){50}a{50}", {"/h/a.txt", "/h/a-bang.txt"}),
    ],
)
def test_catastrophic_backtracking_patterns_finish(
    haystack: Workspace, pattern: str, matching: set[str]
) -> None:
    result = finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    assert {m.path for m in result.matches} == matching
    assert result.files_searched == 4
    result = finishes(lambda: haystack.grep(pattern, "/h", regex=True, ignore_case=True))
    assert {m.path for m in result.matches} == matching


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",
        r"(a+)+\1",
        r"(?P<x>a)(?P=x)",
        r"(?=a)a",
        r"(?!b)a",
        r"(?<=a)a",
        r"(?<!b)a",
        r"\1",
    ],
)
def test_backreferences_and_lookaround_are_refused_clearly(
    haystack: Workspace, pattern: str
) -> None:
    with pytest.raises(InvalidPatternError) as info:
        finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    message = str(info.value)
    assert "backreferences" in message and "regex=False" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "pattern",
    [
        "a" * 1001,
        "(a|" * 400 + "a" + ")" * 400,
        r"a{1001}",
        r"((a{100}){100}){100}",
        r"\pL{1000}",
        r"[a-z]{1000}",
        r"(?:a|b|c|d|e|f|g|h){1000}",
        r"(.*){1000}x",
        "",
    ],
    ids=lambda p: p[:30] or "empty",
)
def test_oversized_patterns_are_refused_or_finish(haystack: Workspace, pattern: str) -> None:
    try:
        result = finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    except InvalidPatternError as exc:
        assert len(str(exc)) < 400  # never echoes a whole huge pattern
    else:
        assert result.files_searched == 4


def test_plain_text_grep_treats_regex_syntax_literally(haystack: Workspace) -> None:
    result = finishes(lambda: haystack.grep(r"(a+)+$", "/h"))
    assert result.matches == ()
    result = finishes(lambda: haystack.grep("a" * 1000, "/h"))
    assert {m.path for m in result.matches} == {"/h/a.txt", "/h/a-bang.txt"}
    assert all(len(m.text) < 600 for m in result.matches)  # long lines are clipped


@pytest.fixture
def long_names(make_store: Callable[[str], Store]) -> Workspace:
    store = make_store("names")
    files = {f"/flat/{'a' * (200 + i)}": b"x" for i in range(20)}
    files["/flat/" + "a" * 254 + "b"] = b"x"
    deep = "/".join(["a"] * 40)
    files[f"/deep/{deep}/b"] = b"x"
    asyncio.run(_seed(store, files))
    return Workspace([Mount.of("/n", store)], policy=Policy.allow_all())


@pytest.mark.parametrize(
    ("pattern", "count"),
    [
        ("*a*a*a*a*a*a*a*a*b", 1),
        ("*a*a*a*a*a*a*a*a*c", 0),
        ("/n/flat/" + "*a" * 100 + "*b", 1),
        ("/n/flat/" + "*a" * 100 + "*c", 0),
        ("**/*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", 1),
        ("**/a/**/a/**/a/**/a/**/a/**/c", 0),
        ("**/a/**/a/**/a/**/a/**/a/**/b", 1),
        ("/n/**/**/**/**/**/**/**/**/**/**/x", 0),
        ("/n/flat/" + "?" * 255, 1),
        ("/n/flat/" + "[a]" * 254 + "[!a]", 1),
    ],
    ids=lambda p: str(p)[:30],
)
def test_hostile_globs_on_long_names_finish(
    long_names: Workspace, pattern: str, count: int
) -> None:
    base = "/n/flat" if not pattern.startswith(("/", "**")) else "/"
    found = finishes(lambda: long_names.glob(pattern, path=base))
    assert len(found) == count, [str(f.path)[-20:] for f in found]


def test_overlong_glob_pattern_is_refused(long_names: Workspace) -> None:
    with pytest.raises(InvalidPatternError, match="longer than"):
        finishes(lambda: long_names.glob("*a" * 600))


def test_hostile_policy_patterns_finish(make_store: Callable[[str], Store]) -> None:
    store = make_store("p")
    asyncio.run(_seed(store, {f"/{'a' * (150 + i)}.txt": b"needle" for i in range(60)}))
    ws = Workspace(
        [Mount.of("/p", store)],
        policy=Policy(
            rules=(
                Rule.deny("*", "/**/*a*a*a*a*a*a*a*a*a*a*a*a*b"),
                Rule.deny("*", "/**/**/**/**/**/**/x/**"),
                Rule.allow("*", "/**"),
            )
        ),
    )
    listing = finishes(lambda: ws.list("/p", recursive=True))
    assert len(listing) == 60
    result = finishes(lambda: ws.grep("needle", "/p"))
    assert result.files_matched == 60


# == 12. oversized files =====================================================================

LIMIT = 1000


@pytest.fixture
def sized(make_store: Callable[[str], Store]) -> tuple[Workspace, Store, Store]:
    docs, other = make_store("docs"), make_store("other")
    asyncio.run(
        _seed(
            docs,
            {
                "/small.txt": b"small\n",
                "/big.txt": b"".join(b"line %04d\n" % i for i in range(500)),  # 5000 bytes
                "/edge.txt": b"e" * LIMIT,
            },
        )
    )
    ws = Workspace(
        [Mount.of("/docs", docs), Mount.of("/other", other)],
        policy=Policy.allow_all(limits=FileLimits(max_file_bytes=LIMIT)),
    )
    return ws, docs, other


async def test_oversized_write_writes_nothing(sized: tuple[Workspace, Store, Store]) -> None:
    ws, docs, other = sized
    before = (await _snapshot(docs), await _snapshot(other))
    attempts: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.write("/docs/new.txt", "x" * (LIMIT + 1)),
        lambda: ws.write("/docs/new.txt", b"\x00" * (LIMIT * 10)),
        lambda: ws.write("/docs/new.txt", "\u00e9" * (LIMIT // 2 + 1)),  # 1002 bytes, 501 chars
        lambda: ws.write("/docs/new/deep/dirs/x.txt", "x" * (LIMIT + 1)),  # no parents either
        lambda: ws.write("/docs/new.txt", "x" * (LIMIT + 1), mode="create"),
        lambda: ws.write("/docs/small.txt", "x" * (LIMIT + 1)),  # overwrite keeps the old content
        lambda: ws.append("/docs/small.txt", "x" * LIMIT),  # small + LIMIT > LIMIT
        lambda: ws.append("/docs/edge.txt", "e"),
        lambda: ws.edit("/docs/small.txt", "small", "s" * (LIMIT + 1)),
        lambda: ws.copy("/docs/big.txt", "/docs/big-copy.txt"),
        lambda: ws.copy("/docs/big.txt", "/other/big.txt"),
        lambda: ws.move("/docs/big.txt", "/other/big.txt"),
        lambda: ws.write("/other/x.txt", "x" * (LIMIT + 1)),
    ]
    for attempt in attempts:
        with pytest.raises(LimitError) as info:
            await attempt()
        assert f"{LIMIT}-byte" in str(info.value)
    with pytest.raises(LimitError):
        ws.sync().write("/docs/sync.txt", "x" * (LIMIT + 1))
    assert (await _snapshot(docs), await _snapshot(other)) == before
    record = ws.audit.records[-1]
    assert not record.allowed and "over limit" in record.reason


async def test_writes_at_the_limit_are_allowed(sized: tuple[Workspace, Store, Store]) -> None:
    ws, docs, _ = sized
    await ws.write("/docs/exact.txt", "x" * LIMIT)
    await ws.write("/docs/exact-multibyte.txt", "\u00e9" * (LIMIT // 2))
    await ws.append("/docs/grow.txt", "g" * (LIMIT - 1))
    await ws.append("/docs/grow.txt", "g")
    assert (await docs.stat(VPath.parse("/grow.txt"))).size == LIMIT


async def test_whole_reads_of_oversized_files_are_refused(
    sized: tuple[Workspace, Store, Store],
) -> None:
    ws, _, _ = sized
    reads: list[Callable[[], Awaitable[Any]]] = [
        lambda: ws.read_text("/docs/big.txt"),
        lambda: ws.read_bytes("/docs/big.txt"),
        lambda: ws.edit("/docs/big.txt", "line 0001", "x"),
    ]
    for attempt in reads:
        with pytest.raises(LimitError, match="read a range"):
            await attempt()
    with pytest.raises(LimitError):
        ws.sync().read_text("/docs/big.txt")
    assert await ws.read_text("/docs/edge.txt") == "e" * LIMIT  # at the limit: fine


async def test_ranges_of_oversized_files_are_allowed(sized: tuple[Workspace, Store, Store]) -> None:
    ws, _, _ = sized
    assert await ws.read_bytes("/docs/big.txt", start=0, end=10) == b"line 0000\n"
    assert await ws.read_bytes("/docs/big.txt", start=4990, end=5000) == b"line 0499\n"
    assert await ws.read_bytes("/docs/big.txt", start=6000, end=7000) == b""
    assert await ws.read_text("/docs/big.txt", offset=0, limit=2) == "line 0000\nline 0001\n"
    assert await ws.read_text("/docs/big.txt", offset=499, limit=10) == "line 0499\n"
    assert ws.sync().read_text("/docs/big.txt", offset=250, limit=1) == "line 0250\n"


async def test_grep_skips_oversized_files_without_reading_them(
    sized: tuple[Workspace, Store, Store],
) -> None:
    ws, _, _ = sized
    result = await ws.grep("line 0042", "/docs")
    assert result.matches == ()
    assert result.skipped == (f"/docs/big.txt: over the {LIMIT}-byte size limit",)
    assert result.files_searched == 2
    with pytest.raises(NotFoundError):
        await ws.read_text("/docs/new.txt")
