"""Hostile regular expressions for grep: program-size cap, time budget, work off the event loop.

RE2 is linear in the input, but its constant is the program size: ``(\\w|\\s){1,999}`` costs
9,000 steps a character once the DFA gives up. Such programs are refused; what is left is
bounded by a per-call matching budget, and runs in a worker thread so other callers keep
being served. Every call here runs under the hard 10 s guard of ``finishes``; the only
assertions are on results, flags and the progress of other coroutines, never on durations.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from security_stores import seed as _seed
from test_resource_attacks import finishes

from bastion.core.errors import InvalidPatternError
from bastion.core.mounts import Mount
from bastion.core.policy import Policy
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace, grep

random.seed(7)
# 2 MB on one line, "abcdefghij " only: a hostile program never finds its "Z".
LONG_LINE = "".join(random.choice("abcdefghij ") for _ in range(2_000_000)).encode()
# 2,000 instructions at most, and one active thread per position: ~1,800 steps a byte.
HOSTILE = r"a[a-j ]{900}Z"


async def aworkspace(files: dict[str, bytes]) -> Workspace:
    store = MemoryStore()
    await _seed(store, files)
    return Workspace([Mount.of("/h", store)], policy=Policy.allow_all())


def workspace(files: dict[str, bytes]) -> Workspace:
    return asyncio.run(aworkspace(files))


FILES = {
    "/1-long.txt": LONG_LINE,
    "/2-spaces.txt": b" " * 1_000_000 + b"x\n" + b"\t" * 300_000,
    "/3-words.txt": b"alpha beta\n" * 1000 + b"needle gamma\n",
}


@pytest.fixture
def haystack() -> Workspace:
    return workspace(FILES)


# == the program-size cap ====================================================================


@pytest.mark.parametrize(
    "pattern",
    [
        r"(\w|\s){1,999}ZZ",  # counted repetition of an alternation: 9,005 instructions
        r"(?i)(\w|\s){1,999}ZZ",
        r"(?:(?:\w{1,10}){1,10}){1,10}",  # nested counted repetition: 4,003
        r"[\s\S]{1000}",  # 7,004
        r"(?:a|b|c|d|e|f|g|h|i|j|\s){600}Z",  # a huge alternation, repeated: 2,405
        r"(?i)\pL{300}",  # Unicode classes expand: 359,104
        r"\pL{1000}",  # over RE2's own memory cap
        r".{1,1000}\w{1,1000}z",
    ],
)
def test_oversized_programs_are_refused_with_one_line(haystack: Workspace, pattern: str) -> None:
    with pytest.raises(InvalidPatternError) as info:
        finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    message = str(info.value)
    assert "too complex" in message and "regex=False" in message
    assert f"limit {grep.MAX_PROGRAM_SIZE}" in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize(
    "pattern",
    [r"(a{1000}){1000}", r"((a{100}){100}){100}", r"a{1001}"],
)
def test_counted_repetition_beyond_re2_is_refused(haystack: Workspace, pattern: str) -> None:
    with pytest.raises(InvalidPatternError) as info:
        finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    assert "invalid regular expression" in str(info.value) or "too complex" in str(info.value)


def test_a_large_alternation_of_words_is_accepted_and_correct(haystack: Workspace) -> None:
    words = [f"w{i:03d}" for i in range(150)] + ["needle"]
    pattern = "|".join(words)  # 900 characters, a small program (a trie)
    result = finishes(lambda: haystack.grep(pattern, "/h", regex=True))
    assert [(m.path, m.line) for m in result.matches] == [("/h/3-words.txt", 1001)]
    assert not result.budget_exhausted and not result.truncated


@pytest.mark.parametrize(
    ("pattern", "lines"),
    [
        (r"(\s*)*x", [1]),
        (r"(\s+\s+)+y", []),
        (r"^(\s|\t)*$", [2]),
        (r"[ \t]*[ \t]*[ \t]*x", [1]),
    ],
)
def test_nested_quantifiers_on_whitespace_runs_finish(
    haystack: Workspace, pattern: str, lines: list[int]
) -> None:
    result = finishes(lambda: haystack.grep(pattern, "/h/2-spaces.txt", regex=True))
    assert [m.line for m in result.matches] == lines
    assert not result.budget_exhausted


# == the time budget =========================================================================


def test_a_program_under_the_cap_stops_at_the_budget_and_says_so(
    haystack: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep, "GREP_BUDGET_S", 0.01)
    result = finishes(lambda: haystack.grep(HOSTILE, "/h", regex=True))
    assert result.budget_exhausted and result.truncated
    assert result.matches == ()
    assert result.files_searched == 1  # the files after the first were never matched
    assert "time budget ran out" in result.format()
    assert "narrow the pattern or the path" in result.format()


def test_matches_found_before_the_budget_ran_out_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ws = workspace({"/a.txt": b"Zfirst\n" + LONG_LINE + b"\nZlast\n"})
    # ample for line 1 on a loaded machine; the long line needs many seconds
    monkeypatch.setattr(grep, "GREP_BUDGET_S", 0.25)
    result = finishes(lambda: ws.grep(r"^Z[a-z]+$|" + HOSTILE, "/h", regex=True))
    assert result.budget_exhausted
    assert [m.line for m in result.matches] == [1]


def test_the_budget_counts_matching_not_the_whole_call(haystack: Workspace) -> None:
    """The default budget is not spent by an ordinary search of many files."""
    result = finishes(lambda: haystack.grep("needle", "/h"))
    assert [m.path for m in result.matches] == ["/h/3-words.txt"]
    assert not result.budget_exhausted and not result.truncated
    assert "[..." not in result.format()


# == long lines ==============================================================================


def test_a_complex_pattern_finds_a_match_deep_in_a_long_line() -> None:
    """A line is searched in windows only when its work is large; they overlap, so a match
    anywhere in the line is found."""
    line = LONG_LINE[:500_000] + b"needle" + b"b" * 700 + b"Z" + LONG_LINE[:300_000]
    ws = workspace({"/a.txt": line + b"\nsecond\n"})
    pattern = r"needle[a-j]{700}Z"  # ~700 instructions: windows of ~190 KB
    cost = grep.compile_matcher(pattern, regex=True, ignore_case=False).cost
    assert grep.WINDOW_WORK // cost < len(line) // 3  # several windows
    result = finishes(lambda: ws.grep(pattern, "/h", regex=True))
    assert [m.line for m in result.matches] == [1]
    assert not result.budget_exhausted


def test_anchors_hold_across_a_long_line() -> None:
    ws = workspace({"/a.txt": b"a" * 3_000_000 + b"\n" + b"a" * 10 + b"!\n"})
    result = finishes(lambda: ws.grep(r"^a+$", "/h", regex=True))
    assert [m.line for m in result.matches] == [1]
    result = finishes(lambda: ws.grep(r"^a{1,20}!$", "/h", regex=True))
    assert [m.line for m in result.matches] == [2]


# == the event loop stays free ===============================================================


async def test_other_callers_are_served_while_a_hostile_grep_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grep, "GREP_BUDGET_S", 0.3)
    haystack = await aworkspace(FILES)
    other = await aworkspace({"/notes.md": b"one\ntwo needle\n"})
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    beat = asyncio.create_task(ticker())
    hostile = asyncio.create_task(haystack.grep(HOSTILE, "/h", regex=True))
    found = await other.grep("needle")
    assert [m.line for m in found.matches] == [2]
    ticks_before = ticks
    await asyncio.sleep(0.05)  # matching on the loop would finish the hostile grep meanwhile
    assert not hostile.done()
    assert ticks > ticks_before  # the ticker ran while the hostile grep matched
    result = await asyncio.wait_for(hostile, timeout=10)
    beat.cancel()
    assert result.budget_exhausted


def test_compiling_runs_in_a_thread_too(haystack: Workspace) -> None:
    """A program that takes long to compile is refused without blocking the loop."""

    async def run() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.create_task(ticker())
        with pytest.raises(InvalidPatternError):
            await haystack.grep(r"(?i)\pL{300}", "/h", regex=True)
        beat.cancel()
        return ticks

    assert finishes(run) > 1


@pytest.mark.parametrize("regex", [True, False])
def test_a_lone_surrogate_in_a_pattern_is_refused(haystack: Workspace, regex: bool) -> None:
    with pytest.raises(InvalidPatternError, match="lone surrogate"):
        finishes(lambda: haystack.grep("a\ud800", "/h", regex=regex))
