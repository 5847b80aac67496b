"""Path parsing: what is refused, what is accepted, and properties that always hold."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bastion.core.errors import InvalidPathError
from bastion.core.paths import MAX_NAME_BYTES, MAX_PATH_BYTES, VPath


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/", "/"),
        ("/docs/a.md", "/docs/a.md"),
        ("docs/a.md", "/docs/a.md"),
        ("/docs//a.md/", "/docs/a.md"),
        ("/docs/./a.md", "/docs/a.md"),
        ("/docs/x/../a.md", "/docs/a.md"),
        ("/report..final.md", "/report..final.md"),
        ("/..test", "/..test"),
        ("/...", "/..."),
        ("/a/.hidden", "/a/.hidden"),
        ("///triple", "/triple"),
        ("/%2e%2e/x", "/%2e%2e/x"),
        ("/notes:2026.md", "/notes:2026.md"),
        ("/caf\u00e9", "/caf\u00e9"),
    ],
)
def test_accepted_paths(raw: str, expected: str) -> None:
    assert str(VPath.parse(raw)) == expected


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("", "empty path"),
        ("/..", "climbs above"),
        ("../etc/passwd", "climbs above"),
        ("/docs/../../etc", "climbs above"),
        ("/docs/a\x00.md", "control character"),
        ("/docs/a\n.md", "control character"),
        ("/docs/\x1b[31m", "control character"),
        ("/docs/\u202eevil.md", "control character"),
        ("/docs\\a.md", "backslash"),
        ("..\\..\\windows", "backslash"),
        ("C:\\Windows", "backslash"),
        ("C:/Windows", "Windows drive"),
        ("c:", "Windows drive"),
        ("/docs/C:/x", "Windows drive"),
        ("\\\\server\\share", "backslash"),
        ("//server/share", "UNC"),
        ("//./COM1", "UNC"),
        ("//?/C:/x", "UNC"),
        ("/" + "a" * (MAX_NAME_BYTES + 1), "longer than"),
        ("/" + "/".join(["abcdefgh"] * 600), "longer than"),
    ],
)
def test_refused_paths(raw: str, fragment: str) -> None:
    with pytest.raises(InvalidPathError, match=fragment):
        VPath.parse(raw)


def test_non_string_is_refused() -> None:
    with pytest.raises(InvalidPathError, match="must be a string"):
        VPath.parse(b"/docs")  # type: ignore[arg-type]


def test_unicode_spellings_are_one_path() -> None:
    nfd = unicodedata.normalize("NFD", "/café/résumé.md")
    nfc = unicodedata.normalize("NFC", "/café/résumé.md")
    assert nfd != nfc
    assert VPath.parse(nfd) == VPath.parse(nfc)


def test_max_lengths_are_inclusive() -> None:
    assert VPath.parse("/" + "a" * MAX_NAME_BYTES).name == "a" * MAX_NAME_BYTES
    long_path = "/" + "/".join(["a" * 200] * 20)
    assert len(long_path.encode()) <= MAX_PATH_BYTES
    assert VPath.parse(long_path).depth == 20


def test_structure_helpers() -> None:
    p = VPath.parse("/docs/api/ref.MD")
    assert p.name == "ref.MD"
    assert p.suffix == ".md"
    assert VPath.parse("/.bashrc").suffix == ""
    assert str(p.parent) == "/docs/api"
    assert p.is_relative_to(VPath.parse("/docs"))
    assert not VPath.parse("/docs2/x").is_relative_to(VPath.parse("/docs"))
    assert str(p.relative_to(VPath.parse("/docs"))) == "/api/ref.MD"
    assert str(VPath.parse("/docs") / "a.md") == "/docs/a.md"
    with pytest.raises(InvalidPathError):
        VPath.parse("/docs") / ".."
    with pytest.raises(InvalidPathError):
        VPath.parse("/docs") / "a/b"
    assert VPath.ROOT.is_root and VPath.ROOT.parent == VPath.ROOT


# -- properties --------------------------------------------------------------------------------

_segment_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
raw_paths = st.lists(
    st.one_of(
        st.sampled_from(["", ".", "..", "...", "a", "b.md", "..x", "é", "e\u0301", "C:", "\\"]),
        st.text(_segment_chars, min_size=0, max_size=12),
    ),
    max_size=12,
).map("/".join)


def _try_parse(raw: str) -> VPath | None:
    try:
        return VPath.parse(raw)
    except InvalidPathError:
        return None


@given(raw_paths)
def test_parse_is_idempotent_and_round_trips(raw: str) -> None:
    parsed = _try_parse(raw)
    if parsed is None:
        return
    again = VPath.parse(str(parsed))
    assert again == parsed
    assert str(again) == str(parsed)
    assert VPath.parse(parsed) is parsed


@given(raw_paths)
def test_parse_never_yields_a_path_outside_root(raw: str) -> None:
    parsed = _try_parse(raw)
    if parsed is None:
        return
    assert str(parsed).startswith("/")
    for part in parsed.parts:
        assert part not in ("", ".", "..")
        assert "/" not in part and "\\" not in part and "\x00" not in part
        assert unicodedata.is_normalized("NFC", part)


@given(st.lists(st.text(_segment_chars, min_size=1, max_size=8), max_size=6))
def test_climbing_out_is_always_refused(names: list[str]) -> None:
    parsed = _try_parse("/" + "/".join(names))
    if parsed is None:
        return
    escape = str(parsed) + "/.." * (parsed.depth + 1)
    with pytest.raises(InvalidPathError):
        VPath.parse(escape)


# -- the fast path (plain ASCII paths skip the general parser) ---------------------------------

_ascii_segment = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=12)
ascii_paths = st.one_of(
    raw_paths,
    st.lists(
        st.one_of(
            st.sampled_from(["", ".", "..", ".git", "a", "C:", "c:x", " ", "a b", "~", "\x7f"]),
            _ascii_segment,
        ),
        max_size=10,
    ).map(lambda parts: "/" + "/".join(parts)),
)


def _outcome(parse: object, raw: str) -> tuple[str, object]:
    try:
        return "ok", parse(raw)  # type: ignore[operator]
    except InvalidPathError as exc:
        return "refused", str(exc)


@given(ascii_paths)
def test_fast_path_agrees_with_the_general_parser(raw: str) -> None:
    assert _outcome(VPath.parse, raw) == _outcome(VPath._parse_general, raw)


@pytest.mark.parametrize(
    "raw",
    [
        "/docs/a.md",
        "/a",
        "/" + "a" * MAX_NAME_BYTES,
        "/" + "a" * (MAX_NAME_BYTES + 1),
        "/" + "/".join(["a" * 200] * 20),
        "/" + "/".join(["abcdefgh"] * 600),
        "/docs/.git/x",
        "/docs/C:/x",
        "/docs/a:b",
        "/docs/a\x7fb",
        "/docs/a\tb",
        "/docs/ lead and trail ",
        "/a//b",
        "/a/",
        "/a/./b",
        "/a/../b",
        "/..",
    ],
    ids=ascii,
)
def test_fast_path_edges(raw: str) -> None:
    assert _outcome(VPath.parse, raw) == _outcome(VPath._parse_general, raw)


@pytest.mark.parametrize(
    "char", ["\u061c", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"], ids=ascii
)
def test_every_bidi_control_is_refused(char: str) -> None:
    with pytest.raises(InvalidPathError, match="control character"):
        VPath.parse(f"/docs/report{char}.txt")
