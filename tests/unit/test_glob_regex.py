"""Glob segments are matched by compiled regular expressions; the answers are those of the
two-pointer wildcard algorithm the module used before (kept here as the reference), on
random patterns and names, and a hostile pattern stays fast to refuse a long name."""

from __future__ import annotations

import random

from bastion.core import globs
from bastion.core.globs import Glob
from bastion.core.paths import VPath


def _reference_segment(tokens: globs._SegmentPattern, name: str) -> bool:
    def one(token: object, ch: str) -> bool:
        if token == globs._ANY:
            return True
        if isinstance(token, globs._Class):
            return token.matches(ch)
        return token == ch

    t = n = 0
    star, mark = -1, 0
    while n < len(name):
        if t < len(tokens) and tokens[t] == globs._STAR:
            star, mark = t, n
            t += 1
        elif t < len(tokens) and one(tokens[t], name[n]):
            t += 1
            n += 1
        elif star != -1:
            t = star + 1
            mark += 1
            n = mark
        else:
            return False
    while t < len(tokens) and tokens[t] == globs._STAR:
        t += 1
    return t == len(tokens)


ALPHABET = "ab.-]^!["
PIECES = ["*", "?", "a", "b", ".", "[ab]", "[!a]", "[a-b]", "[b-a]", "[]", "[!]", "[^.]", "["]


def test_segments_match_as_the_two_pointer_algorithm() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        pattern = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))
        tokens = globs._compile_segment(pattern)
        regex = globs._segment_regex(tokens)
        for _ in range(8):
            name = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8)))
            expected = _reference_segment(tokens, name)
            assert (regex.fullmatch(name) is not None) == expected, (pattern, name)


def test_whole_paths_match_with_double_stars() -> None:
    glob = Glob.compile("/docs/**/a*b/*.md")
    assert glob.matches(VPath.parse("/docs/a-b/x.md"))
    assert glob.matches(VPath.parse("/docs/1/2/aXb/y.md"))
    assert not glob.matches(VPath.parse("/docs/1/2/aXc/y.md"))
    assert glob.could_match_below(VPath.parse("/docs/q"))
    assert not Glob.compile("/src/*.py").could_match_below(VPath.parse("/docs"))


def test_a_hostile_segment_is_refused_in_linear_time() -> None:
    glob = Glob.compile("/" + "*a" * 40 + "*b")
    assert not glob.matches(VPath.parse("/" + "a" * 250))
