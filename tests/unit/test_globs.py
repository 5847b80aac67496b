"""Glob matching over path segments."""

from __future__ import annotations

import itertools

import pytest

from bastion.core.errors import InvalidPatternError
from bastion.core.globs import Glob
from bastion.core.paths import VPath


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/docs/**", "/docs", True),
        ("/docs/**", "/docs/a/b/c.md", True),
        ("/docs/**", "/docs2/a", False),
        ("/docs/*.md", "/docs/a.md", True),
        ("/docs/*.md", "/docs/sub/a.md", False),
        ("/docs/**/*.md", "/docs/a.md", True),
        ("/docs/**/*.md", "/docs/x/y/a.md", True),
        ("/docs/**/*.md", "/docs/x/y/a.txt", False),
        ("**/*.md", "/deep/er/file.md", True),
        ("/a/?.txt", "/a/b.txt", True),
        ("/a/?.txt", "/a/bb.txt", False),
        ("/a/[abc].txt", "/a/b.txt", True),
        ("/a/[!abc].txt", "/a/b.txt", False),
        ("/a/[a-c]x", "/a/cx", True),
        ("/secret/*", "/secret/.env", True),
        ("/", "/", True),
        ("/", "/a", False),
        ("/**", "/", True),
        ("/a/**/b/**/c", "/a/x/b/y/z/c", True),
        ("/a/**/b/**/c", "/a/x/c", False),
    ],
)
def test_matches(pattern: str, path: str, expected: bool) -> None:
    assert Glob.compile(pattern).matches(VPath.parse(path)) is expected


def test_literal_prefix_and_depth() -> None:
    g = Glob.compile("/docs/api/**/*.md")
    assert str(g.literal_prefix) == "/docs/api"
    assert g.max_depth is None
    assert Glob.compile("/docs/*.md").max_depth == 2


def test_could_match_below_prunes() -> None:
    g = Glob.compile("/docs/*/index.md")
    assert g.could_match_below(VPath.parse("/docs"))
    assert g.could_match_below(VPath.parse("/docs/a"))
    assert not g.could_match_below(VPath.parse("/other"))
    assert not g.could_match_below(VPath.parse("/docs/a/b"))


@pytest.mark.parametrize("bad", ["", "/a/../b", "/a\\b", "/a\x00"])
def test_bad_patterns(bad: str) -> None:
    with pytest.raises(InvalidPatternError):
        Glob.compile(bad)


def test_hostile_pattern_is_linear() -> None:
    # A backtracking matcher would not finish these in any reasonable time.
    g = Glob.compile("/" + "*a" * 40 + "*b")
    name = "a" * 250
    assert not g.matches(VPath.parse("/" + name))
    deep = Glob.compile("/**/a" * 30 + "/**/b")
    assert not deep.matches(VPath.parse("/" + "/".join(["a"] * 200)))


def test_a_pattern_with_one_double_star_matches_as_the_general_walk() -> None:
    """Patterns with at most one ``**`` are decided by their two ends (issue 31): the same
    answer as the general segment matcher, on every path of a small alphabet."""
    names = ["a", "b", "ab", "a.md", ".md"]
    paths = [VPath(p) for n in range(5) for p in itertools.product(names, repeat=n)]
    segments = ["a", "*", "?", "*.md", "[ab]", "**"]
    for n in range(4):
        for combo in itertools.product(segments, repeat=n):
            if combo.count("**") > 1:
                continue
            fast = Glob.compile("/" + "/".join(combo))
            general = Glob.compile("/" + "/".join(combo))
            object.__setattr__(general, "_ends", None)
            for path in paths:
                assert fast.matches(path) == general.matches(path), (combo, path)
