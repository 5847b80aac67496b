"""A grep scan searches a file whole, yet answers exactly as matching it line by line would.

The reference is the per-line predicate (``LineMatcher.__call__``) over ``str.splitlines`` of
the decoded text: every scan, whichever engine it takes, must find the same lines."""

from __future__ import annotations

import itertools

import pytest

from bastion.workspace import grep
from bastion.workspace.grep import Budget, compile_matcher

TEXTS = [
    b"",
    b"\n",
    b"alpha\nbeta\ngamma\n",
    b"alpha\nbeta\ngamma",  # no final line break
    b"alpha\r\nbeta\r\n\r\ngamma\r\n",  # CRLF
    b"alpha\rbeta\rgamma",  # lone CR: split by splitlines, not by \n
    b"page one\x0cpage two\nthree\x1cfour\x1d\x1e",
    "one\u2028two\u2029three\x85four\nfive".encode(),
    b"caf\xe9 broken \xff utf-8\nStra\xc3\x9fe grosse\nSTRASSE\n",
    "ne\u0301e\nK\u212a kelvin\n\u00df\n".encode(),
    b"a" * 70 + b"\n\n\nend\n",
    b"x = 1\ntimeout = 5000\n  timeout=12\nTIMEOUT = 999\n",
]

PATTERNS = [
    ("a", False),
    ("beta", False),
    ("strasse", False),
    ("\u00df", False),
    ("k", False),
    ("ta\ngam", False),
    ("\ufffd", False),  # a replaced byte: in no file's bytes, yet in its lines
    ("caf\ufffd broken", False),
    ("a\rb", False),
    ("one\u2028two", False),
    ("Stra\u00dfe", False),
    ("ne\u0301e", False),
    ("a", True),
    ("^", True),
    ("$", True),
    ("^$", True),
    ("^gamma$", True),
    ("a$", True),
    ("^b", True),
    ("\\Aalpha", True),
    ("gamma\\z", True),
    ("(?-m)^beta", True),
    ("a\\sb", True),
    ("a[^x]b", True),
    ("(?s)a.b", True),
    ("\\C", True),
    ("a\\C*e", True),
    ("\\bbeta\\b", True),
    ("\\B", True),
    ("x*", True),
    ("timeout\\s*=\\s*\\d{3,}", True),
    ("\ufffd", True),
    ("\\x{FFFD}", True),
    ("caf.", True),
    ("[\\n]", True),
    ("\\n", True),
    ("e$|^t", True),
]


def _reference(matcher: grep.LineMatcher, data: bytes) -> list[int]:
    lines = data.decode("utf-8", "replace").splitlines()
    return [i for i, line in enumerate(lines) if matcher(line)]


@pytest.mark.parametrize(("pattern", "regex"), PATTERNS)
@pytest.mark.parametrize("ignore_case", [False, True])
def test_scan_finds_the_lines_a_line_by_line_match_finds(
    pattern: str, regex: bool, ignore_case: bool
) -> None:
    matcher = compile_matcher(pattern, regex=regex, ignore_case=ignore_case)
    for data in TEXTS:
        scan = matcher.scan(data, Budget())
        assert scan.hits == _reference(matcher, data), (pattern, data)
        assert not scan.stopped
        if scan.hits:
            assert scan.lines == data.decode("utf-8", "replace").splitlines()


def test_patterns_about_the_whole_text_are_matched_line_by_line() -> None:
    for pattern in ("\\Ax", "x\\z", "(?-m)^x", "(?i-m:x$)"):
        assert compile_matcher(pattern, regex=True, ignore_case=False).whole is None
    assert compile_matcher("^x$", regex=True, ignore_case=False).whole is not None


def test_lines_longer_than_a_window_are_still_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep, "WINDOW_WORK", 64 * 40)  # windows of a few dozen bytes
    matcher = compile_matcher("needle[0-9]", regex=True, ignore_case=False)
    long_line = b"hay " * 200 + b"needle7" + b" hay" * 200
    lines = [b"short", long_line, b"needle", b"x" * 500, b"a needle3"]
    for combo in itertools.permutations(lines, 4):
        data = b"\n".join(combo) + b"\n"
        assert matcher.scan(data, Budget()).hits == _reference(matcher, data)


def test_a_limit_stops_the_scan_after_one_line_more() -> None:
    data = b"hit\n" * 50
    for regex in (False, True):
        matcher = compile_matcher("hit", regex=regex, ignore_case=False)
        assert matcher.scan(data, Budget(), limit=10).hits == list(range(11))
        assert len(matcher.scan(data, Budget()).hits) == 50
