"""Which names are sidecars (``core.sidecars.labelled_file_of``): the suffix in any case, by
Unicode case folding. The quick refusal for a name whose last characters are ASCII must agree
with folding the whole name."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bastion.core.paths import VPath
from bastion.core.sidecars import SIDECAR_SUFFIX, labelled_file_of

LONG_S = "\u017f"  # folds to "s"
FILE = VPath.parse("/d/a.md")


@st.composite
def _suffixes(draw: st.DrawFn) -> str:
    """The suffix with each letter in either case (an "s" maybe a long s), maybe one more
    character after it (ASCII or not)."""
    out = []
    for char in SIDECAR_SUFFIX:
        choices = [char, char.upper()] + ([LONG_S] if char == "s" else [])
        out.append(draw(st.sampled_from(choices)))
    extra = draw(st.sampled_from(["", "x", "S", LONG_S, "\u00df", "\u00e9", "\u212a"]))
    return "".join(out) + extra


@given(_suffixes())
def test_a_name_is_a_sidecar_exactly_when_it_folds_to_the_suffix(suffix: str) -> None:
    name = "a.md" + suffix
    found = labelled_file_of(FILE.parent.child(name))
    if name.casefold().endswith(SIDECAR_SUFFIX):
        assert found == FILE
    else:
        assert found is None


def test_the_suffix_in_any_case_names_the_file() -> None:
    for suffix in (".labels.yaml", ".LABELS.YAML", ".Labels.yaml", f".label{LONG_S}.yaml"):
        assert labelled_file_of(VPath.parse(f"/d/a.md{suffix}")) == FILE
    for name in ("a.md", "a.md.labels.yml", "labels.yaml", "a.md.labels.yaml.bak", ".labels.yaml"):
        assert labelled_file_of(VPath.parse(f"/d/{name}")) is None
