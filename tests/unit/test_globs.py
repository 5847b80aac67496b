"""Glob matching over path segments."""

from __future__ import annotations

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
